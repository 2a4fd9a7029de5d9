"""The cost of ``python -m shared.culprit run``: one case's forward pass under a Diagnosis
against the same pass without, in a process of its own (``benchmark`` runs one per case).

    python -m shared.harness.overhead CASE
        -> one JSON line: case, model, device, bare_s, diagnosed_s, every_call_s, call_through_s,
           hooks_only_s, fully_watched_calls, batch, batched_bare_s, batched_diagnosed_s

The case's first CPU-runnable passing variant runs once to build its model and inputs; its
outermost module call that runs the most modules (the case's model, its arguments: not a caller's
own embedding or a text encoder called before it) is then timed bare and diagnosed, both
on one intra-op thread: the gallery's tiny models gain nothing from a second one, and on a shared
machine a second thread's wake-ups (a scheduler's time slice each, more often the longer the
Python work between two ops) would be measured instead of the diagnosis. A model on a CUDA
device is timed to the end of its kernels (each pass synchronised): a launch returns before its
kernel runs, and the diagnosis waits for each judged output (its finiteness read back), so
unsynchronised passes would time the bare model's launches against the diagnosed model's kernels.

``diagnosed_s``: a pass after the model's first ``fully_watched_calls`` calls, whose forwards the
diagnosis watches torch call by torch call (as it does a call given inputs of a new kind: the
timed passes repeat one call's inputs, so the module hooks alone watch them); ``every_call_s``:
the same pass watched as those first calls are (``--every-call``).

``call_through_s``: the same pass under a ``TorchFunctionMode`` that only calls each function
through, the least any watch of every torch call costs (torch hands each call, a ``.dtype`` read
too, to Python): the floor of the diagnosis's own overhead, which must watch inside forwards
(SDPA's masks, fills and FFTs happen there).

``hooks_only_s``: the same pass under one global forward pre-hook and one global forward hook
that do nothing: torch's slow call path for every module and a Python call per hook, what any
watch by module hooks costs before it checks anything (the diagnosis's own checks come on top).

``batched_*``: the same pass with every tensor argument's batch (its first dimension) repeated
``batch`` times, doubled until the bare pass lasts BATCHED_S (at most MAX_BATCH): the diagnosis
costs per module call and per torch call, the model per element, so the ratio at the gallery's
tiny sizes (each op a dispatch more than a computation) is its worst and this one nearer a real
model's. None where the model refuses the repeated arguments (a first dimension that is no
batch).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import runpy
import sys
import time

from shared.harness.catalog import load_case
from shared.record import HARNESS_VARIABLE

ROUNDS = 10
BLOCKS = 3
BATCHED_S, MAX_BATCH = 0.02, 1024


def case_model_call(script) -> tuple:
    """(module, args, kwargs, autocast) of the outermost module call ``script`` completes that
    runs the most modules: the case's model, not a caller's own embedding or a pipeline's text
    encoder called before it. The first of those that still runs replayed: a script may call a
    model, then cast it (a float32 reference first), and that call's arguments no longer fit.
    ``autocast``: the CPU autocast dtype it ran under, or None (a fix that is autocast fails
    replayed without it)."""
    import torch
    from torch.nn.modules import module as torch_module

    largest: list = [0, []]  # the module calls of the largest calls, and those calls
    depth, calls, autocast = [0], [0], [None]

    def entering(module, args):
        if depth[0] == 0:
            autocast[0], calls[0] = cpu_autocast_dtype(), 0
        depth[0] += 1
        calls[0] += 1

    def leaving(module, args, *rest):
        depth[0] -= 1
        if depth[0] or len(rest) != 2 or calls[0] < largest[0]:
            return  # inside a model, raised (no output), or smaller
        if calls[0] > largest[0]:
            largest[:] = calls[0], []
        largest[1].append((module, args, rest[0], autocast[0]))  # kwargs too (from_pretrained's)

    handles = [torch_module.register_module_forward_pre_hook(entering),
               torch_module.register_module_forward_hook(leaving, with_kwargs=True,
                                                         always_call=True)]  # fmt: skip
    sys.path.insert(0, str(script.parent))
    os.environ[HARNESS_VARIABLE] = "1"  # no by-hand verdict line
    try:
        with contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
            runpy.run_path(str(script), run_name="__main__")
    except BaseException:  # noqa: BLE001, S110 - the models called before the end are enough
        pass
    finally:
        for handle in handles:
            handle.remove()
    for module, args, kwargs, ran_under in largest[1]:
        try:
            with torch.no_grad(), replayed_under(ran_under):
                module(*args, **kwargs)
        except Exception:  # noqa: BLE001, S112 - changed since: the next of the largest
            continue
        return module, args, kwargs, ran_under
    return None, (), {}, None


def cpu_autocast_dtype():
    """The dtype CPU autocast runs in now, or None where it is off."""
    import torch

    try:  # torch >= 2.4 (its CPU-only functions deprecated there)
        return torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else None
    except (TypeError, AttributeError):
        return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None


def replayed_under(autocast) -> contextlib.AbstractContextManager:
    """The autocast the measured call ran under, for its replays."""
    import torch

    if autocast is None:
        return contextlib.nullcontext()
    return torch.autocast("cpu", dtype=autocast)


def model_device(module, args, kwargs):
    """The device of the model's first parameter or buffer (else of its first tensor argument),
    the CPU where it has none."""
    import torch

    from shared.culprit.tensors import tensors_of

    tensors = (*module.parameters(), *module.buffers(), *tensors_of(args), *tensors_of(kwargs))
    return tensors[0].device if tensors else torch.device("cpu")


def timed_pass(module, device):
    """The model's pass as timed: on a CUDA device, the pass and then a wait for its kernels."""
    import torch

    if device.type != "cuda":
        return module

    def synchronised(*args, **kwargs):
        output = module(*args, **kwargs)
        torch.cuda.synchronize(device)
        return output

    return synchronised


def seconds(module, args, kwargs, *watches) -> list[float]:
    """The fastest of ROUNDS passes bare, then under a new ``watch()`` of each given, in BLOCKS
    alternating blocks (each watched one after a pass that meets the modules): a loaded machine
    slows some passes and some stretches of time; the fastest is the least disturbed."""
    import torch

    def fastest() -> float:
        times = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            module(*args, **kwargs)
            times.append(time.perf_counter() - started)
        return min(times)

    measured = [[] for _ in range(len(watches) + 1)]  # bare first
    torch.set_num_threads(1)
    with torch.no_grad():
        module(*args, **kwargs)  # warm
        for _ in range(BLOCKS):
            measured[0].append(fastest())
            for watch, times in zip(watches, measured[1:], strict=True):
                with watch():
                    module(*args, **kwargs)
                    times.append(fastest())
    return [min(times) for times in measured]


def batched(value, times: int):
    """``value`` with each tensor's first dimension repeated ``times`` times, one level into
    tuples, lists and dicts (0-d tensors and other values as they are)."""
    import torch

    def one(item):
        if isinstance(item, torch.Tensor) and item.dim():
            return item.repeat_interleave(times, dim=0)
        return item

    if isinstance(value, dict):
        return {key: one(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(one(item) for item in value)
    return one(value)


def batched_seconds(module, args, kwargs, watch):
    """(batch, bare seconds, seconds under ``watch()``) of the pass with its batch repeated, or
    (batch, None, None) where the model refuses the repeated arguments."""
    import torch

    times, lasted = 1, 0.0
    while lasted < BATCHED_S and times < MAX_BATCH:
        times *= 2
        bigger = batched(args, times), batched(kwargs, times)
        try:
            with torch.no_grad():
                module(*bigger[0], **bigger[1])  # a first pass at a new size is slower
                started = time.perf_counter()
                module(*bigger[0], **bigger[1])
                lasted = time.perf_counter() - started
        except Exception:  # noqa: BLE001 - a first dimension that is no batch: nothing to measure
            return times, None, None
    return times, *seconds(module, *bigger, watch)


def call_through():
    """A TorchFunctionMode that watches nothing: each call goes through unchanged."""
    from torch.overrides import TorchFunctionMode

    class CallThrough(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    return CallThrough()


@contextlib.contextmanager
def empty_hooks():
    """A global forward pre-hook and forward hook (with keyword arguments, always called, as the
    diagnosis's are) that do nothing."""
    from torch.nn.modules import module as torch_module

    handles = [torch_module.register_module_forward_pre_hook(lambda module, args: None),
               torch_module.register_module_forward_hook(lambda module, args, *rest: None,
                                                          with_kwargs=True, always_call=True)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def measured_call(case_name: str) -> tuple:
    """(variant, module, args, kwargs, autocast): the case's first passing variant that needs no
    GPU and runs as plain Python, and its model call as timed (module None where there is none)."""
    case = load_case(case_name)
    variant = next((v for v in case.variants if v.expectation.expect == "pass"
                    and not v.requires.cuda and not v.requires.gpus and v.launcher == "python"),
                   None)  # fmt: skip
    return variant, *(case_model_call(variant.script) if variant else (None, (), {}, None))


def main(case_name: str) -> None:
    from shared.culprit.diagnose import FULLY_WATCHED_CALLS, Diagnosis

    variant, module, args, kwargs, autocast = measured_call(case_name)
    if module is None:
        print(json.dumps({"case": case_name, "model": None}))
        return
    every_call_diagnosis = functools.partial(Diagnosis, every_call=True)
    device = model_device(module, args, kwargs)
    timed = timed_pass(module, device)
    with replayed_under(autocast):
        bare, diagnosed, every_call, through, hooks_only = seconds(
            timed, args, kwargs, Diagnosis, every_call_diagnosis, call_through, empty_hooks
        )
        times, batched_bare, batched_diagnosed = batched_seconds(timed, args, kwargs, Diagnosis)
    print(json.dumps({"case": case_name, "variant": variant.name, "model": type(module).__name__,
                      "device": str(device), "bare_s": bare, "diagnosed_s": diagnosed,
                      "every_call_s": every_call,
                      "call_through_s": through, "hooks_only_s": hooks_only,
                      "fully_watched_calls": FULLY_WATCHED_CALLS,
                      "batch": times, "batched_bare_s": batched_bare,
                      "batched_diagnosed_s": batched_diagnosed}))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1])
