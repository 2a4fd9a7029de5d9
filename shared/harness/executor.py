"""Run one variant script in *this* process and write its outcome as JSON.

The harness calls :func:`execute` in a fresh child process (forked from a parent that only
imported libraries, or spawned as ``python -m shared.harness.executor SCRIPT RESULT``). The
script runs exactly as ``python SCRIPT`` would; an exception it raises is recorded (type,
message, the frames it passed through) and its traceback printed, as Python would print it.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import time
import traceback
import uuid
import warnings
from pathlib import Path

from shared.harness.paths import SHARED_DIR, relative, relative_text
from shared.harness.report import ErrorRecord, ProcessResult, WarningRecord
from shared.hazards import CULPRIT_WATCHER, FINDERS, SILENT_WATCHER
from shared.record import HARNESS_VARIABLE, RECORD, setting_of, watch_autocast

RANK_VARIABLE = "RANK"  # set by torchrun for each rank
# Set by the runner to the on-demand watchers a variant needs (names of shared.hazards.FINDERS,
# e.g. "values": inf/NaN producers of a failure that raises nothing); the always-on ones (the
# MismatchGuard) watch every variant.
WATCH_VARIABLE = "GALLERY_WATCH"


def execute(script: Path, result_path: Path) -> int:
    """Run ``script`` as ``__main__``; write the outcome to ``result_path``; return exit code."""
    sys.argv = [str(script)]
    sys.path.insert(0, str(script.parent))
    os.environ[HARNESS_VARIABLE] = "1"  # the harness judges this run: no by-hand verdict line
    started = time.perf_counter()
    result = ProcessResult(rank=os.environ.get(RANK_VARIABLE))
    gallery = (script.parent.resolve(), SHARED_DIR)  # the gallery's own code, not a library's
    diagnosis = _diagnosis()
    watchers = _watchers(diagnosis)
    diagnosis_watchers = ((*diagnosis.watchers, *diagnosis.profiled.watchers)
                          if diagnosis is not None else ())  # fmt: skip
    guard, values = watchers.get(CULPRIT_WATCHER), watchers.get(SILENT_WATCHER)
    try:
        with contextlib.ExitStack() as watching:
            if diagnosis is not None:  # its guards and OpWatch serve as the watchers too
                watching.enter_context(diagnosis)
            for watcher in watchers.values():
                if watcher not in diagnosis_watchers:
                    watching.enter_context(watcher)
            watching.enter_context(_recording_warnings(result.warnings))
            watching.enter_context(_autocast_watch())
            called = watching.enter_context(_calls_watch())
            namespace = None  # the script's globals: its models stay alive while named
            try:
                namespace = runpy.run_path(str(script), run_name="__main__")
            finally:  # while the variant's models are alive: full module paths, hazards
                for watcher in watchers.values():
                    if hasattr(watcher, "resolve_paths"):
                        watcher.resolve_paths()
                namespace = namespace or _raising_globals(script)
                result.hazards = _hazards(namespace, *watchers.values())
                others = [w for w in watchers.values() if w not in diagnosis_watchers]
                result.diagnosis = _diagnose(diagnosis, namespace, sys.exc_info()[1], *others)
                result.setting = _setting(namespace, called)
                del namespace
    except SystemExit as exc:
        if exc.code not in (None, 0):
            result.status, result.exception = "raised", ErrorRecord.of(exc, gallery, script)
    except BaseException as exc:  # noqa: BLE001 - every failure is data for the verdict
        result.status, result.exception = "raised", ErrorRecord.of(exc, gallery, script)
        traceback.print_exc()
    result.wall_s = time.perf_counter() - started
    result.device = RECORD["device"]
    result.checks, result.measurements = RECORD["checks"], RECORD["measurements"]
    result.knobs = RECORD["knobs"]
    result.culprit = _first_mismatch(guard)
    result.producer = _first_producer(values)
    result.write(result_path)
    return 0 if result.status == "clean" else 1


@contextlib.contextmanager
def _recording_warnings(seen: list[WarningRecord]):
    """Record every warning that is shown, and still show it (the filters stay as they are)."""
    show = warnings.showwarning

    def record_and_show(message, category, filename, lineno, file=None, line=None):
        seen.append(
            WarningRecord(
                category.__name__, relative_text(str(message)), f"{relative(filename)}:{lineno}"
            )
        )
        show(message, category, filename, lineno, file, line)

    warnings.showwarning = record_and_show
    try:
        yield
    finally:
        warnings.showwarning = show


def _diagnosis():
    """What ``python -m shared.culprit run`` would say of this variant (every variant is run
    under it: the gallery is its test set); None without torch."""
    try:
        from shared.culprit.diagnose import Diagnosis
        from shared.culprit.watchers import ProfileWatches
    except ImportError:  # no torch here: nothing to watch
        return None
    # Only the profile-function watchers the runner asked for (FSDP1's flattening, ...): one
    # slows every Python call of the variant.
    wanted = os.environ.get(WATCH_VARIABLE, "").split()
    return Diagnosis(profiled=ProfileWatches.of_registry(wanted))


def _diagnose(diagnosis, namespace: dict, raised: BaseException | None, *others) -> dict | None:
    """The diagnosis as the variant's record keeps it (paths relative); ``others``: the
    on-demand watchers the runner added (FSDP1's FlatParamWatch), whose finds count too."""
    if diagnosis is None:
        return None
    try:
        problem = diagnosis.problem(namespace, raised, *others)
    except Exception as exc:  # noqa: BLE001 - diagnosing must never break a verdict
        return {"problem": None, "notes": [f"the diagnosis failed: {exc!r}"]}
    record = problem.as_json() if problem else None
    if record and record["file"]:
        record["file"] = relative(record["file"])
    if record:
        record["detail"] = relative_text(record["detail"])
    return {"problem": record, "notes": diagnosis.notes()}


def _watchers(diagnosis) -> dict:
    """The watchers (shared.hazards.FINDERS) this variant runs under, by finder name: the
    always-on ones (the MismatchGuard: names the module where a dtype/device mismatch started,
    the "culprit"), and those the runner asked for; the diagnosis's own where it has one.
    Record only: the variant's own error still happens in the library code."""
    if diagnosis is None:
        return {}
    import shared.culprit

    own = {"MismatchGuard": diagnosis.guard, "NonFiniteGuard": diagnosis.values,
           "OpWatch": diagnosis.ops}  # fmt: skip
    own |= {type(watcher).__name__: watcher for watcher in diagnosis.profiled.watchers}
    wanted = os.environ.get(WATCH_VARIABLE, "").split()
    return {
        name: own.get(finder.watcher) or getattr(shared.culprit, finder.watcher)()
        for name, finder in FINDERS.items()
        if finder.watcher and (finder.always or name in wanted)
    }


def _autocast_watch():
    """The autocast regions the variant enters, recorded (shared.record.watch_autocast)."""
    try:
        import torch  # noqa: F401 - only where torch is installed
    except ImportError:
        return contextlib.nullcontext()
    return watch_autocast()


@contextlib.contextmanager
def _calls_watch():
    """The modules called while the variant runs (by id, in call order), for a script that
    keeps its models inside functions."""
    called: dict[int, object] = {}
    try:
        from torch.nn.modules.module import register_module_forward_pre_hook
    except ImportError:
        yield called
        return

    def remember(module, args) -> None:  # a pre-hook that returns something replaces args
        called.setdefault(id(module), module)

    handle = register_module_forward_pre_hook(remember)
    try:
        yield called
    finally:
        handle.remove()


def _setting(namespace: dict, called: dict) -> dict:
    """The setting the variant ran (shared.record.setting_of): the models it holds at its end,
    the outermost modules it called that none of them holds (models kept inside functions; by
    class, the first called of each) and the autocast it entered. A fixed variant's must be its
    broken twin's (verdicts.setting_mismatch)."""
    try:
        from shared.culprit.diagnose import held_models

        models = held_models(namespace)[0]
        held = {id(m) for model in models.values() for m in model.modules()}
        inside = {id(m) for module in called.values() for m in list(module.modules())[1:]}
        for key, module in called.items():  # in call order: the first of a class is named
            if key not in inside and key not in held:
                models.setdefault(f"({type(module).__name__})", module)
        return setting_of(models, RECORD["autocast"])
    except Exception:  # noqa: BLE001 - recording must never break a verdict
        return {}


def _raising_globals(script: Path) -> dict:
    """The script's globals from the exception in flight (its models, as they were then)."""
    tb = sys.exc_info()[2]
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(script):
            return tb.tb_frame.f_globals
        tb = tb.tb_next
    return {}


def _hazards(namespace: dict, *watchers) -> list[dict]:
    """The hazard patterns (shared.culprit) of every model, pipeline and optimizer the script
    holds at its end, and those its watchers saw while it ran."""
    try:
        from shared.culprit.diagnose import held_hazards
    except ImportError:
        return []
    return held_hazards(namespace, *watchers)


def _first_producer(values) -> dict | None:
    """The watched variant's first inf/NaN producer, or a record that none appeared."""
    if not hasattr(values, "first"):
        return None  # not watched
    if values.first is None:
        return {"module": "", "description": "none: every module's output stayed finite"}
    return _first_mismatch(values)


def _first_mismatch(guard) -> dict | None:
    first = getattr(guard, "first", None)
    if first is None:
        return None
    from shared.culprit import as_record

    return as_record(first)


def launch_ranks(script: Path, result_path: Path, ranks: int) -> int:
    """Run ``script`` on ``ranks`` ranks as `torchrun --standalone --nproc-per-node=N` does.

    Uses torchrun's own launcher (``elastic_launch``: rendezvous, RANK/WORLD_SIZE/MASTER_*
    variables, failure monitoring) with the ranks forked from this process, which has already
    imported the libraries, instead of each rank starting a new interpreter.
    """
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=ranks,
        run_id=str(uuid.uuid4()),
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",
        max_restarts=0,
        start_method="fork",
        monitor_interval=0.05,
    )
    try:
        elastic_launch(config, _rank_main)(str(script), str(result_path))
    except ChildFailedError:  # a rank died (e.g. by a signal): its result file is missing
        traceback.print_exc()
        return 1
    return 0


def _rank_main(script: str, result: str) -> None:
    # A rank records its failure in its result file and returns: had it raised, the launcher
    # would stop the other ranks before they could record theirs.
    execute(Path(script), rank_result_path(Path(result)))


def rank_result_path(result: Path) -> Path:
    """One result file per rank under torchrun (RANK set), else the path itself."""
    if RANK_VARIABLE not in os.environ:
        return result
    return result.with_name(f"{result.stem}.rank{os.environ[RANK_VARIABLE]}{result.suffix}")


def main() -> None:
    script, result = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    sys.stdout.flush()
    exit_code = execute(script, rank_result_path(result))
    # A torchrun rank exits 0 once its failure is recorded, as _rank_main returns: a non-zero
    # exit would make the launcher stop the other ranks before they record theirs.
    raise SystemExit(0 if RANK_VARIABLE in os.environ else exit_code)


if __name__ == "__main__":
    main()
