"""Runtime watchers, record only: hazards that show while a variant runs (:class:`OpWatch`: torch
calls' arguments; :class:`FlatParamWatch`: what FSDP1 flattens), and :func:`seen_hazards`, what
any watcher saw, as hazards.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections import Counter

import torch
from torch import nn
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode

from shared.culprit.audit import HALF_DTYPES, _dtype_name
from shared.culprit.finders import Hazard, _added_as_scores
from shared.culprit.guards import Mismatch, NonFinite, _full_path, _live_parents


def seen_hazards(*watchers) -> list[Hazard]:
    """The hazards watchers saw while a model ran: MismatchGuard's first mismatch,
    NonFiniteGuard's first inf/NaN producer, everything an OpWatch recorded."""
    found = []
    for watcher in watchers:
        first = getattr(watcher, "first", None)
        if isinstance(first, Mismatch):
            found.append(Hazard("mismatched-input", first.module, first.describe()))
        elif isinstance(first, NonFinite):
            found.append(Hazard("non-finite-output", first.module, first.describe()))
        found += getattr(watcher, "found", [])
    return found


class OpWatch(TorchFunctionMode):
    """Context manager: record the hazards that show in the arguments of torch calls (a
    ``TorchFunctionMode``, public API; each call runs unchanged): a float 0/1 mask given to
    ``scaled_dot_product_attention``, an FFT asked for in half precision, a random draw from a
    generator on another device type, a number filled into a half tensor beyond its range.
    ``.found`` lists the first of each kind."""

    FFTS = {getattr(torch.fft, name): name for name in (
        "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
        "rfftn", "irfftn", "hfft", "ihfft")}  # fmt: skip
    FILLS = {torch.Tensor.masked_fill: "Tensor.masked_fill", torch.masked_fill: "masked_fill",
        torch.Tensor.masked_fill_: "Tensor.masked_fill_", torch.Tensor.fill_: "Tensor.fill_",
        torch.full: "torch.full"}  # fmt: skip

    def __init__(self):
        super().__init__()
        self.found: list[Hazard] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True  # the call's own error is raised by func, not by this watch
        kwargs = kwargs or {}
        if (
            func in self.FFTS
            or func in self.FILLS
            or func is F.scaled_dot_product_attention
            or isinstance(kwargs.get("generator"), torch.Generator)
        ):
            try:
                self._inspect(func, args, kwargs)
            except Exception:  # noqa: BLE001, S110 - watching must never break the model
                pass
        return func(*args, **kwargs)

    def _inspect(self, func, args: tuple, kwargs: dict) -> None:
        seen = {hazard.kind for hazard in self.found}
        if func is F.scaled_dot_product_attention:
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            if "float-attention-mask" not in seen and mask is not None and _added_as_scores(mask):
                detail = f"attn_mask {_dtype_name(mask.dtype)} of 0 and 1"
                self.found.append(
                    Hazard("float-attention-mask", "scaled_dot_product_attention", detail)
                )
        elif isinstance(kwargs.get("generator"), torch.Generator):
            if "generator-device" not in seen:
                self.found += _draw_on_another_device(func, args, kwargs)
        elif func in self.FILLS:
            if "fill-out-of-range" not in seen:
                self.found += _fill_out_of_range(self.FILLS[func], args, kwargs)
        elif "half-fft" not in seen:
            data = kwargs.get("input", args[0] if args else None)
            if isinstance(data, torch.Tensor) and data.dtype in HALF_DTYPES:
                detail = f"input {_dtype_name(data.dtype)} on {data.device}"
                self.found.append(Hazard("half-fft", f"torch.fft.{self.FFTS[func]}", detail))


def _draw_on_another_device(func, args: tuple, kwargs: dict) -> list[Hazard]:
    """A random call (``torch.randn``, ``Tensor.normal_``, ...) whose generator is on another
    device type than the tensor it makes or fills: torch refuses it on CUDA."""
    generator = kwargs["generator"]
    filled = next((arg for arg in args if isinstance(arg, torch.Tensor)), None)
    if kwargs.get("device") is not None:
        target = torch.device(kwargs["device"])
    elif filled is not None:  # Tensor.normal_(...) fills it; randn_like(x) draws like it
        target = filled.device
    else:
        target = torch.get_default_device() if hasattr(torch, "get_default_device") else None
    if target is None or target.type == generator.device.type:
        return []
    name = getattr(func, "__name__", str(func))
    detail = f"a {generator.device.type} generator drawing a {target.type} tensor"
    return [Hazard("generator-device", name, detail)]


def _fill_out_of_range(name: str, args: tuple, kwargs: dict) -> list[Hazard]:
    """A Python number filled into a half tensor beyond its dtype's largest finite value
    (float32's minimum, -1e9 into float16): torch refuses it, "value cannot be converted to
    type at::Half without overflow". Named by the module whose forward does the fill."""
    value = kwargs.get("value", kwargs.get("fill_value", args[-1] if args else None))
    if name == "torch.full":
        dtype = kwargs.get("dtype") or torch.get_default_dtype()
    else:
        dtype = args[0].dtype
    half = dtype in (torch.float16, torch.bfloat16)
    if not half or type(value) not in (int, float) or not math.isfinite(value):
        return []
    largest = torch.finfo(dtype).max
    if abs(value) <= largest:
        return []
    detail = f"{value:g} into a {_dtype_name(dtype)} tensor (its range ends at +-{largest:g})"
    return [Hazard("fill-out-of-range", _running_module() or name, f"{name}: {detail}")]


def _running_module() -> str:
    """The path of the innermost module whose ``forward`` is running, "" outside any."""
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "forward" else None
        if isinstance(owner, nn.Module):
            return _full_path(owner, _live_parents())
        frame = frame.f_back
    return ""


class FlatParamWatch:
    """Context manager: record the first FSDP1 unit whose parameters, given to its
    ``FlatParamHandle`` to flatten into one FlatParameter, hold more than one dtype.

    FSDP1 has no hook: a ``sys.setprofile`` function reads the handle's arguments as it is
    built (record only; the FSDP1 module is private, its arguments the same from torch 2.1 to
    2.13). Slows Python calls while active: watch the wrapping, not a whole training run."""

    def __init__(self):
        self.found: list[Hazard] = []
        self._code = _flat_param_handle_init()
        self._previous = None

    def __enter__(self):
        self._previous = sys.getprofile()
        if self._code is not None:
            sys.setprofile(self._on_event)
        return self

    def __exit__(self, *exc_info) -> None:
        sys.setprofile(self._previous)

    def _on_event(self, frame, event: str, arg) -> None:
        if event != "call" or frame.f_code is not self._code or self.found:
            return
        try:
            params = list(frame.f_locals["params"])
            dtypes = Counter(_dtype_name(p.dtype) for p in params)
            if len(dtypes) > 1:
                unit = frame.f_locals["fully_sharded_module"]
                where = _full_path(unit, _live_parents())
                counts = " and ".join(f"{n} {dtype}" for dtype, n in sorted(dtypes.items()))
                self.found.append(Hazard("mixed-flat-param", where, f"{counts} parameters"))
        except Exception:  # noqa: BLE001, S110 - watching must never break the model
            pass


def _flat_param_handle_init():
    """The code of FSDP1's ``FlatParamHandle.__init__`` (``_flat_param`` since torch 2.1)."""
    for module in ("torch.distributed.fsdp._flat_param", "torch.distributed.fsdp.flat_param"):
        try:
            handle = importlib.import_module(module).FlatParamHandle
        except (ImportError, AttributeError):
            continue
        return handle.__init__.__code__
    return None
