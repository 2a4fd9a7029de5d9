"""What a running variant tells the harness besides its exception: device, checks, measurements,
knobs.

The helpers in ``shared.checks`` append here while a variant runs; the harness's executor
writes it out with the outcome. Run by hand (``python cases/x/fixed.py``), the run ends with
the verdict line the harness would give it, judged from the same record.
"""

import atexit
import os
import sys
import warnings
from pathlib import Path

# knobs: the arbitrary tiny-model choices this run made (shared.tiny_models.knob / tiny_seed).
RECORD: dict = {"device": None, "checks": [], "measurements": [], "knobs": {}, "warnings": []}


# Run by hand (``python cases/<case>/<variant>.py``), a variant ends with the line the harness
# would give it (shared.harness.by_hand); under the harness (GALLERY_HARNESS set) it does not.
HARNESS_VARIABLE = "GALLERY_HARNESS"


def _run_by_hand() -> Path | None:
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if os.environ.get(HARNESS_VARIABLE) or not main_file:
        return None
    script = Path(main_file).resolve()
    return script if (script.parent / "case.toml").is_file() else None


def _tell_verdict(script: Path, raised: list[BaseException]) -> None:
    sys.stdout.flush()
    try:
        from shared.harness.by_hand import verdict_line

        line = verdict_line(script, RECORD, raised[-1] if raised else None)
    except Exception as exc:  # noqa: BLE001 - the run itself is over; say why there is no line
        line = f"gallery verdict: none ({type(exc).__name__}: {exc})"
    print(line, file=sys.stderr if raised else sys.stdout, flush=True)


def _watch_by_hand_run() -> None:
    script = _run_by_hand()
    if script is None:
        return
    raised: list[BaseException] = []
    previous = sys.excepthook

    def remember(kind, value, traceback):
        raised.append(value)
        previous(kind, value, traceback)

    shown = warnings.showwarning

    def record_warning(message, category, filename, lineno, file=None, line=None):
        RECORD["warnings"].append((category.__name__, str(message), filename, lineno))
        shown(message, category, filename, lineno, file, line)

    sys.excepthook = remember
    warnings.showwarning = record_warning  # a warning can be the documented failure
    atexit.register(_tell_verdict, script, raised)


_watch_by_hand_run()
