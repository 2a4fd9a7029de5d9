"""Start variants in fresh child processes, enforce their time limits, collect their outcomes.

Two ways to start a child, same result:
- fork (default on Linux/macOS): the parent has only *imported* the heavy libraries (no model
  built, no default dtype or autocast changed, CUDA never initialised), so each forked child
  starts from a clean state without paying the 2-4 s import again;
- spawn: ``python -m shared.harness.executor SCRIPT RESULT`` in a new interpreter, used everywhere
  when ``GALLERY_START=spawn`` is set; torchrun variants then run the real `torchrun` command.
Forked torchrun variants use torchrun's launcher in the child, which forks the ranks
(``shared.harness.executor.launch_ranks``).
Each child leads its own process group, so a timeout kills everything it started.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from shared.harness import UsageError
from shared.harness.case import Case, Variant
from shared.harness.libraries import NOT_PRELOADED
from shared.harness.paths import REPO_ROOT
from shared.harness.report import Outcome, ProcessResult

START_METHOD_VARIABLE = "GALLERY_START"
POLL_SECONDS = 0.02
TERMINATE_GRACE_SECONDS = 3.0  # after SIGTERM, before SIGKILL (nox waits likewise)
EXECUTOR = "shared.harness.executor"  # the module a spawned child runs


@dataclass
class Job:
    case: Case
    variant: Variant
    work_dir: Path
    threads: int = 1
    ranks: int = 1  # torchrun variants: processes to launch (see shared.distributed)


def start_method(cuda_visible: bool = False) -> str:
    """How variants start: ``GALLERY_START`` if set; else spawned where a CUDA GPU is visible
    (the parent's imports can initialise CUDA: peft and transformers import bitsandbytes, which
    asks for the device's capability, and a child forked after that cannot use the GPU), else
    forked from one parent that imported the libraries once."""
    default = "fork" if hasattr(os, "fork") and not cuda_visible else "spawn"
    wanted = os.environ.get(START_METHOD_VARIABLE, default)
    if wanted not in ("fork", "spawn"):
        raise UsageError(f"{START_METHOD_VARIABLE} must be 'fork' or 'spawn', got {wanted!r}")
    return wanted


def preload(case_folders: Iterable[Path]) -> dict[str, BaseException]:
    """Import what the chosen cases' files import, once, before forking, and the executor every
    child runs (its watchers import torch); return the top-level modules that could not be
    imported, with what they raised. A library no chosen case imports is left out: a run of one
    case pays for its own imports only.

    ``from transformers import Trainer`` is resolved too: transformers imports lazily, and the
    attribute access is what pays for the import.
    """
    wanted = [("torch", ())]  # every case needs it (and so does the executor's diagnosis)
    wanted += [import_ for folder in case_folders for import_ in library_imports(folder)]
    wanted += [(EXECUTOR, ()), ("shared.culprit.diagnose", ())]  # what execute() imports
    failed: dict[str, BaseException] = {}
    for module_name, attributes in wanted:
        top = module_name.split(".")[0]
        if top in NOT_PRELOADED or top in failed:
            continue
        try:
            module = importlib.import_module(module_name)
            for attribute in attributes:
                getattr(module, attribute, None)
        except Exception as exc:  # noqa: BLE001 - the caller decides what a failure means
            if module_name == top:
                failed[top] = exc
    return failed


def library_imports(case_folder: Path) -> list[tuple[str, tuple[str, ...]]]:
    """Every import of every file of a case (variants and their tiny-model modules, in a
    function too), as (module, names imported from it), and what a function the case imports
    from the gallery's ``shared`` modules imports when called (``quiet_hf_logging``:
    transformers); the case's own sibling modules are left out."""
    siblings = {path.stem for path in case_folder.glob("*.py")}
    imports = []
    for path in sorted(case_folder.glob("*.py")):
        imports += _imports_in(path)
    for module, names in list(imports):
        if module.split(".")[0] == "shared" and names:
            imports += _imports_in(REPO_ROOT.joinpath(*module.split(".")).with_suffix(".py"), names)
    return [(module, names) for module, names in imports if module.split(".")[0] not in siblings]


def _imports_in(path: Path, functions: tuple[str, ...] = ()) -> list[tuple[str, tuple[str, ...]]]:
    """The imports anywhere in a file (or, ``functions`` named, in those functions' bodies)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return []
    roots = [node for node in tree.body if isinstance(node, ast.FunctionDef)
             and node.name in functions] if functions else [tree]  # fmt: skip
    imports = []
    for node in (inner for root in roots for inner in ast.walk(root)):
        if isinstance(node, ast.Import):
            imports += [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imports.append((node.module, tuple(alias.name for alias in node.names)))
    return imports


def start_cuda_probe() -> Callable[[], list[str]]:
    """Ask a child process for the names of the visible CUDA GPUs; return the function that
    waits for its answer. Started before the parent imports anything: the parent must never
    initialise CUDA before it forks, and the child's own import of torch runs meanwhile."""
    if start_method() == "spawn":
        code = "import json, shared.harness.runner as r; print(json.dumps(r._cuda_names()))"
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT
        )
        return lambda: json.loads(child.communicate()[0] or "[]")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.write(write_end, json.dumps(_cuda_names()).encode())
        finally:
            os._exit(0)
    os.close(write_end)

    def names() -> list[str]:
        with os.fdopen(read_end, "rb") as pipe:
            answer = pipe.read()
        os.waitpid(pid, 0)
        return json.loads(answer or b"[]")

    return names


def _cuda_names() -> list[str]:
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


class _Child:
    """A started child: a forked pid or a spawned Popen, polled the same way."""

    def __init__(self, job: Job, method: str) -> None:
        self.job = job
        self.result_path = job.work_dir / "result.json"
        self.log_path = job.work_dir / "output.log"
        # The child's temporary files (checkpoints, trainer output) go here; removed after it.
        self.tmp_dir = job.work_dir / "tmp"
        shutil.rmtree(job.work_dir, ignore_errors=True)
        self.tmp_dir.mkdir(parents=True)
        self.started = time.perf_counter()
        self.deadline = self.started + job.variant.timeout
        if method == "spawn":
            self.process: subprocess.Popen | None = self._spawn()
            self.pid = self.process.pid
        else:
            self.process = None
            self.pid = self._fork()

    def _spawn(self) -> subprocess.Popen:
        script = str(self.job.variant.script)
        if self.job.variant.launcher == "torchrun":
            command = [
                sys.executable, "-m", "torch.distributed.run", "--standalone",
                f"--nproc-per-node={self.job.ranks}",
                "-m", EXECUTOR, script, str(self.result_path),
            ]  # fmt: skip
        else:
            command = [
                sys.executable,
                "-m",
                "shared.harness.executor",
                script,
                str(self.result_path),
            ]
        env = {
            **os.environ,
            "PYTHONPATH": _with_repo_root(os.environ.get("PYTHONPATH")),
            "TMPDIR": str(self.tmp_dir),
            **self._watch(),
        }
        env.setdefault("OMP_NUM_THREADS", str(self.job.threads))
        with open(self.log_path, "wb") as log:
            return subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env,
                cwd=REPO_ROOT, start_new_session=True,
            )  # fmt: skip

    def _fork(self) -> int:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid:
            _set_process_group(pid)
            return pid
        exit_code = 70
        try:  # in the child: never return into the parent's code
            _set_process_group(0)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            tempfile.tempdir = str(self.tmp_dir)
            log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(log, 1)
            os.dup2(log, 2)
            sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
            if "torch" in sys.modules:
                sys.modules["torch"].set_num_threads(self.job.threads)
            os.environ.update(self._watch())
            from shared.harness.executor import execute, launch_ranks

            if self.job.variant.launcher == "torchrun":
                exit_code = launch_ranks(self.job.variant.script, self.result_path, self.job.ranks)
            else:
                exit_code = execute(self.job.variant.script, self.result_path)
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(exit_code)

    def _watch(self) -> dict[str, str]:
        """The executor's watchers this variant needs: the inf/NaN producer watch where it may
        fail silently, and the watcher that finds its case's hazard where it is audited."""
        from shared.harness.executor import WATCH_VARIABLE
        from shared.hazards import HAZARDS, ON_DEMAND, SILENT_WATCHER

        watchers = {SILENT_WATCHER} if self.job.variant.may_fail_silently else set()
        for audit in self.job.variant.audit_kinds:
            watchers.update(HAZARDS[self.job.case.hazard_looked_for(audit)].found_by)
        watchers &= set(ON_DEMAND)  # the rest look at the end state, or always watch
        return {WATCH_VARIABLE: " ".join(sorted(watchers))} if watchers else {}

    def poll(self) -> int | None:
        if self.process is not None:
            return self.process.poll()
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        return os.waitstatus_to_exitcode(status) if pid else None

    def stop(self) -> int:
        """As nox stops a command: SIGTERM to the whole process group, a grace period, then
        SIGKILL to whatever of the group is left; return the child's exit code."""
        _signal_group(self.pid, signal.SIGTERM)
        deadline = time.perf_counter() + TERMINATE_GRACE_SECONDS
        returncode = self.poll()
        while returncode is None and time.perf_counter() < deadline:
            time.sleep(POLL_SECONDS)
            returncode = self.poll()
        _signal_group(self.pid, signal.SIGKILL)  # the grandchildren too, even if the child left
        if returncode is None:
            returncode = self.wait()
        return returncode

    def wait(self) -> int:
        if self.process is not None:
            return self.process.wait()
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])

    def outcome(self, returncode: int, timed_out: bool) -> Outcome:
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        results = []
        for path in sorted(self.job.work_dir.glob("result*.json")):
            try:
                results.append(ProcessResult.read(path))
            except (OSError, ValueError, TypeError, KeyError):
                pass  # a torn result file counts as no result
        return Outcome(
            returncode=returncode,
            timed_out=timed_out,
            wall_s=time.perf_counter() - self.started,
            log=self.log_path.read_text(encoding="utf-8", errors="replace"),
            results=results,
            ranks=self.job.ranks,
        )


def run_jobs(jobs: list[Job], parallel: int, method: str) -> Iterator[tuple[Job, Outcome]]:
    """Run jobs, at most ``parallel`` at a time, each started by ``method``; yield (job,
    outcome) in the order given."""
    pending = list(enumerate(jobs))
    running: dict[int, _Child] = {}
    finished: dict[int, Outcome] = {}
    next_to_yield = 0
    try:
        while next_to_yield < len(jobs):
            while pending and len(running) < max(1, parallel):
                index, job = pending.pop(0)
                running[index] = _Child(job, method)
            for index, child in list(running.items()):
                returncode = child.poll()
                if returncode is not None:
                    finished[index] = child.outcome(returncode, timed_out=False)
                elif time.perf_counter() > child.deadline:
                    finished[index] = child.outcome(child.stop(), timed_out=True)
                else:
                    continue
                del running[index]
            while next_to_yield in finished:
                yield jobs[next_to_yield], finished.pop(next_to_yield)
                next_to_yield += 1
            if running:
                time.sleep(POLL_SECONDS)
    finally:  # interrupted (Ctrl-C, an error): leave no child behind
        for child in running.values():
            child.stop()


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def _set_process_group(pid: int) -> None:
    try:
        os.setpgid(pid, pid)
    except (PermissionError, ProcessLookupError):
        pass  # the other side of the fork already did it, or the child is gone


def _with_repo_root(pythonpath: str | None) -> str:
    return os.pathsep.join(filter(None, [str(REPO_ROOT), pythonpath]))
