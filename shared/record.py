"""What a running variant tells the harness: device, checks, measurements, knobs, the
exception it raised (:func:`raised`), and the setting it ran (:func:`setting_of`: its models'
parameter dtypes and quantized layers at its end, the autocast it entered).

The helpers in ``shared.checks`` append here while a variant runs; the harness's executor
writes it out with the outcome. Run by hand (``python cases/x/fixed.py``), the run ends with
the verdict line the harness would give it, judged from the same record: this module hands the
record to ``python -m shared.harness.by_hand`` (a command, not an import: the cases' API never
imports the harness, which imports it).
"""

import atexit
import json
import os
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

# knobs: the arbitrary tiny-model choices this run made (shared.tiny_models.knob / tiny_seed);
# autocast: each autocast region entered, "autocast:<dtype>" (watch_autocast).
RECORD: dict = {"device": None, "checks": [], "measurements": [], "knobs": {}, "warnings": [],
                "autocast": []}  # fmt: skip

# The setting a variant ran, as facts a fixed variant's twin must share (the harness's rule: a
# fix proves it ran what its broken twin fails in): "<dtype>" (a floating dtype its models'
# parameters hold), "quantized:<Layer>" (a quantized layer class), "autocast:<dtype>".
QUANTIZED_MODULES = ("bitsandbytes.", "torch.ao.nn.quantized", "torch.nn.quantized")


def setting_of(models: dict, autocast=()) -> dict:
    """The setting a variant ran: per model it holds at its end (torch modules by name), the
    floating dtypes of its parameters and its quantized layer classes; and the autocast regions
    it entered. Facts sorted, as plain data."""
    facts = {}
    for name, model in models.items():
        # A quantized weight's dtype types its packed bytes (bitsandbytes' quant_storage: uint8
        # on the CPU, often bfloat16 on CUDA), not its values: its layer's fact stands for it.
        held = {str(p.dtype).removeprefix("torch.") for p in model.parameters()
                if p.is_floating_point() and not _quantized(p)}  # fmt: skip
        held |= {f"quantized:{type(m).__name__}" for m in model.modules() if _quantized(m)}
        facts[name] = sorted(held)
    return {"models": facts, "autocast": sorted(autocast)}


def _quantized(module_or_parameter) -> bool:
    return type(module_or_parameter).__module__.startswith(QUANTIZED_MODULES)


class watch_autocast:  # noqa: N801 - used as a context manager, like torch.autocast
    """Record (in RECORD["autocast"]) each enabled autocast region a run enters: torch.autocast
    and its device subclasses (torch.cuda.amp.autocast, torch.cpu.amp.autocast) alike."""

    def __enter__(self):
        from torch.amp.autocast_mode import autocast

        self._autocast, self._enter = autocast, autocast.__enter__
        enter = self._enter

        def recording_enter(region):
            if getattr(region, "_enabled", False):
                dtype = str(getattr(region, "fast_dtype", "")).removeprefix("torch.")
                fact = f"autocast:{dtype}"
                if fact not in RECORD["autocast"]:
                    RECORD["autocast"].append(fact)
            return enter(region)

        autocast.__enter__ = recording_enter
        return self

    def __exit__(self, *exc) -> None:
        self._autocast.__enter__ = self._enter


# Run by hand (``python cases/<case>/<variant>.py``), a variant ends with the line the harness
# would give it (shared.harness.by_hand); under the harness (GALLERY_HARNESS set) it does not.
HARNESS_VARIABLE = "GALLERY_HARNESS"


def _run_by_hand() -> Path | None:
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if os.environ.get(HARNESS_VARIABLE) or not main_file:
        return None
    script = Path(main_file).resolve()
    return script if (script.parent / "case.toml").is_file() else None


def raised(exc: BaseException) -> dict:
    """An exception as plain data: its type, message, and the (file, function) of each frame it
    passed through, innermost last. A frame that says ``__tracebackhide__`` (pytest's
    convention: the gallery's watchers, e.g. OpWatch's ``__torch_function__``, which only pass
    each call on) is left out: a library's error under a watcher stays the library's."""
    return {
        "type": type(exc).__name__,
        "qualified_type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "message": str(exc),
        "frames": [
            (frame.f_code.co_filename, frame.f_code.co_name)
            for frame, _ in traceback.walk_tb(exc.__traceback__)
            if not frame.f_locals.get("__tracebackhide__")
        ],
    }


def _cuda_names() -> list[str]:
    torch = sys.modules.get("torch")  # the variant imported it; CUDA is the variant's to start
    if torch is None or not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def _tell_verdict(script: Path, seen: list[BaseException]) -> None:
    sys.stdout.flush()
    facts = {
        "script": str(script),
        "record": RECORD,
        "raised": raised(seen[-1]) if seen else None,
        "cuda": _cuda_names(),
    }
    repository = Path(__file__).resolve().parents[1]  # where ``shared`` is, by its real path
    try:
        judged = subprocess.run(
            [sys.executable, "-m", "shared.harness.by_hand"],
            input=json.dumps(facts, default=str), capture_output=True, text=True, cwd=repository,
            env={**os.environ, "PYTHONPATH": str(repository)}, timeout=300,
        )  # fmt: skip
        last = (judged.stderr.strip().splitlines() or ["no output"])[-1]
        line = judged.stdout.strip() or f"gallery verdict: none ({last})"
    except Exception as exc:  # noqa: BLE001 - the run itself is over; say why there is no line
        line = f"gallery verdict: none ({type(exc).__name__}: {exc})"
    print(line, file=sys.stderr if seen else sys.stdout, flush=True)


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
