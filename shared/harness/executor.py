"""Run one variant script in *this* process and write its outcome as JSON.

The harness calls :func:`execute` in a fresh child process (forked from a parent that only
imported libraries, or spawned as ``python -m shared.harness.executor SCRIPT RESULT``). The
script runs exactly as ``python SCRIPT`` would; an exception it raises is recorded (type,
message, the frames it passed through) and its traceback printed, as Python would print it.
"""

from __future__ import annotations

import contextlib
import dataclasses
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
from shared.record import HARNESS_VARIABLE, RECORD

RANK_VARIABLE = "RANK"  # set by torchrun for each rank
# Set by the runner for a variant whose failure raises nothing: watch for inf/NaN producers.
WATCH_VALUES_VARIABLE = "GALLERY_WATCH_VALUES"


def execute(script: Path, result_path: Path) -> int:
    """Run ``script`` as ``__main__``; write the outcome to ``result_path``; return exit code."""
    sys.argv = [str(script)]
    sys.path.insert(0, str(script.parent))
    os.environ[HARNESS_VARIABLE] = "1"  # the harness judges this run: no by-hand verdict line
    started = time.perf_counter()
    result = ProcessResult(rank=os.environ.get(RANK_VARIABLE))
    gallery = (script.parent.resolve(), SHARED_DIR)  # the gallery's own code, not a library's
    guard, values = _mismatch_guard(), _value_guard()
    try:
        with guard, values, _recording_warnings(result.warnings):
            namespace = None  # the script's globals: its models stay alive while named
            try:
                namespace = runpy.run_path(str(script), run_name="__main__")
            finally:  # while the variant's models are alive: full module paths, hazards
                for watcher in (guard, values):
                    if hasattr(watcher, "resolve_paths"):
                        watcher.resolve_paths()
                result.hazards = _hazards(namespace or _raising_globals(script))
                del namespace
    except SystemExit as exc:
        if exc.code not in (None, 0):
            result.status, result.exception = "raised", ErrorRecord.of(exc, gallery)
    except BaseException as exc:  # noqa: BLE001 - every failure is data for the verdict
        result.status, result.exception = "raised", ErrorRecord.of(exc, gallery)
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


def _mismatch_guard():
    """Watch every module call for inputs whose dtype/device differ from the module's weights.

    Record mode only: the variant's own error still happens in the library code; the guard
    just names the module where the mismatch started (the "culprit").
    """
    try:
        from shared.culprit import MismatchGuard
    except ImportError:  # no torch here: nothing to watch
        return contextlib.nullcontext()
    return MismatchGuard()


def _raising_globals(script: Path) -> dict:
    """The script's globals from the exception in flight (its models, as they were then)."""
    tb = sys.exc_info()[2]
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(script):
            return tb.tb_frame.f_globals
        tb = tb.tb_next
    return {}


def _hazards(namespace: dict) -> list[dict]:
    """The hazard patterns (shared.culprit.hazards) of every model the script holds at its end:
    its nn.Modules, and the components of its pipelines."""
    try:
        from torch import nn

        from shared.culprit import hazards
    except ImportError:
        return []
    models = {}
    for name, value in namespace.items():
        components = getattr(value, "components", None)
        if isinstance(value, nn.Module):
            models[name] = value
        elif isinstance(components, dict):
            models.update({f"{name}.{k}": v for k, v in components.items()
                           if isinstance(v, nn.Module)})  # fmt: skip
    inside = {id(m) for model in models.values() for m in list(model.modules())[1:]}
    found = []
    for name, model in models.items():
        if id(model) in inside:
            continue  # a part of another model the script holds: audited as part of it
        try:
            found += [{"model": name, "case": h.case, **dataclasses.asdict(h)}
                      for h in hazards(model)]  # fmt: skip
        except Exception:  # noqa: BLE001, S112 - auditing must never break a verdict
            continue
    return found


def _value_guard():
    """For a variant whose failure raises nothing: name the module that first produced inf or
    NaN from finite inputs (record only), when the runner asks for it."""
    if not os.environ.get(WATCH_VALUES_VARIABLE):
        return contextlib.nullcontext()
    try:
        from shared.culprit import NonFiniteGuard
    except ImportError:
        return contextlib.nullcontext()
    return NonFiniteGuard()


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
    raise SystemExit(execute(script, rank_result_path(result)))


if __name__ == "__main__":
    main()
