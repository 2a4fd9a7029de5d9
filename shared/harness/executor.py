"""Run one variant script in *this* process and write its outcome as JSON.

The harness calls :func:`execute` in a fresh child process (forked from a parent that only
imported libraries, or spawned as ``python -m shared.harness.executor SCRIPT RESULT``). The
script runs exactly as ``python SCRIPT`` would; an exception it raises is recorded (type,
message, the frames it passed through) and its traceback printed, as Python would print it.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
import time
import traceback
import uuid
from pathlib import Path

from shared.record import RECORD

RANK_VARIABLE = "RANK"  # set by torchrun for each rank


def execute(script: Path, result_path: Path) -> int:
    """Run ``script`` as ``__main__``; write the outcome to ``result_path``; return exit code."""
    sys.argv = [str(script)]
    sys.path.insert(0, str(script.parent))
    started = time.perf_counter()
    outcome: dict = {"status": "clean", "exception": None}
    guard = _mismatch_guard()
    try:
        with guard:
            try:
                runpy.run_path(str(script), run_name="__main__")
            finally:  # while the variant's models are alive: full module paths
                if hasattr(guard, "resolve_paths"):
                    guard.resolve_paths()
    except SystemExit as exc:
        if exc.code not in (None, 0):
            outcome = {"status": "raised", "exception": _describe(exc)}
    except BaseException as exc:  # noqa: BLE001 - every failure is data for the verdict
        outcome = {"status": "raised", "exception": _describe(exc)}
        traceback.print_exc()
    outcome.update(
        wall_s=time.perf_counter() - started,
        device=RECORD["device"],
        device_reason=RECORD["device_reason"],
        checks=RECORD["checks"],
        rank=os.environ.get(RANK_VARIABLE),
        culprit=_first_mismatch(guard),
    )
    result_path.write_text(json.dumps(outcome, indent=2), encoding="utf-8")
    return 0 if outcome["status"] == "clean" else 1


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


def _first_mismatch(guard) -> dict | None:
    first = getattr(guard, "first", None)
    if first is None:
        return None
    from shared.culprit import as_record

    return as_record(first)


def _describe(exc: BaseException) -> dict:
    frames = traceback.extract_tb(exc.__traceback__)
    return {
        "type": type(exc).__name__,
        "qualified_type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "message": str(exc),
        # "file:function" for each frame, innermost last: where the error really came from.
        "frames": [f"{frame.filename}:{frame.name}" for frame in frames],
    }


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
