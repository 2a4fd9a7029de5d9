"""How much of the diagnosis's cost is judging each output's finiteness (README, "Diagnose"):
one case's model pass (as ``python -m shared.harness.overhead`` picks and times it) bare, under
the diagnosis, under it with each output's reduction launched but never read back (on a GPU, no
wait), with no finiteness judged, and under two empty global hooks; ratios to the bare pass.

    PYTHONPATH=. python tools/finiteness_share.py CASE...   -> one JSON line per case
"""

import contextlib
import json
import sys

import shared.culprit.guards as guards
from shared.culprit.diagnose import Diagnosis
from shared.harness.overhead import (
    empty_hooks,
    measured_call,
    model_device,
    replayed_under,
    seconds,
    timed_pass,
)

real_finite = guards._finite
reads = [0]


def counting(tensor):
    reads[0] += 1
    return real_finite(tensor)


def launched_only(tensor):  # the reduction queued, never read back: no wait for the GPU
    tensor.sum()
    return True


def nothing(tensor):
    return True


def diagnosis_with(finite):
    @contextlib.contextmanager
    def watch():
        guards._finite = finite
        try:
            with Diagnosis():
                yield
        finally:
            guards._finite = real_finite

    return watch


for name in sys.argv[1:]:
    variant, module, args, kwargs, autocast = measured_call(name)
    if module is None:
        sys.exit(f"{name}: no model called by a passing variant that needs no GPU")
    device = model_device(module, args, kwargs)
    timed = timed_pass(module, device)
    with replayed_under(autocast):
        bare, diagnosed, no_read, no_check, hooks = seconds(
            timed,
            args,
            kwargs,
            Diagnosis,
            diagnosis_with(launched_only),
            diagnosis_with(nothing),
            empty_hooks,
        )
        with diagnosis_with(counting)():
            timed(*args, **kwargs)
            reads[0] = 0
            timed(*args, **kwargs)
    print(
        json.dumps(
            {
                "case": name,
                "variant": variant.name,
                "model": type(module).__name__,
                "device": str(device),
                "bare_ms": bare * 1e3,
                "diagnosed": diagnosed / bare,
                "sum_not_read": no_read / bare,
                "no_finiteness": no_check / bare,
                "hooks_only": hooks / bare,
                "reads_per_pass": reads[0],
            }
        ),
        flush=True,
    )
