"""Runtime watchers, record only: hazards that show while a variant runs (:class:`OpWatch`: torch
calls' arguments; :class:`FlatParamWatch`: what FSDP1 flattens; :class:`UnscaleWatch`: a
GradScaler unscaling twice; :class:`TrainingArgsWatch`: the precision transformers'
TrainingArguments are asked for), :class:`ProfileWatches`: the profile-function watchers under
one profile function, and :func:`seen_hazards`, what any watcher saw, as hazards.

Every watcher (these and the guards) exposes ``.found``: the hazards it saw, a list of
:class:`~shared.culprit.finders.Hazard`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import threading
from collections import Counter

import torch
from torch import nn
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode

from shared.culprit.finders import Hazard
from shared.culprit.tensors import (
    HALF_DTYPES,
    added_as_scores,
    dtype_name,
    full_path,
    live_parents,
)
from shared.hazards import FINDERS


def seen_hazards(*watchers) -> list[Hazard]:
    """The hazards watchers saw while a model ran (each one's ``.found``): MismatchGuard's first
    mismatch, NonFiniteGuard's first inf/NaN producer, everything the other watchers recorded."""
    return [hazard for watcher in watchers for hazard in watcher.found]


class OpWatch(TorchFunctionMode):
    """Context manager: record the hazards that show in the arguments of torch calls (a
    ``TorchFunctionMode``, public API; each call runs unchanged): a float 0/1 mask given to
    ``scaled_dot_product_attention``, an FFT asked for in half precision, a random draw from a
    generator on another device type, a number filled into a half tensor beyond its range, a
    bfloat16 tensor handed to NumPy (``Tensor.numpy``, or ``Tensor.__array__`` from
    ``np.asarray``). ``.found`` lists the first of each kind."""

    FFTS = {getattr(torch.fft, name): name for name in (
        "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
        "rfftn", "irfftn", "hfft", "ihfft")}  # fmt: skip
    # np.asarray(tensor) reaches Tensor.__array__, which calls .numpy() with this mode paused.
    TO_NUMPY = {torch.Tensor.numpy: "Tensor.numpy", torch.Tensor.__array__: "Tensor.__array__"}
    FILLS = {torch.Tensor.masked_fill: "Tensor.masked_fill", torch.masked_fill: "masked_fill",
        torch.Tensor.masked_fill_: "Tensor.masked_fill_", torch.Tensor.fill_: "Tensor.fill_",
        torch.full: "torch.full"}  # fmt: skip
    WATCHED = frozenset((*FFTS, *TO_NUMPY, *FILLS, F.scaled_dot_product_attention))

    def __init__(self):
        super().__init__()
        self.found: list[Hazard] = []
        self.failed: FailedOp | None = None  # the first torch call that raised, and where
        self._paused = False

    def pause(self) -> bool:
        """Step off torch's mode stack for a while (a model's forward after its first calls:
        torch hands each call to Python while this mode is on it), where this mode is the
        innermost one; True if it did. A torch without the stack's accessor: never."""
        current = getattr(torch.overrides, "_get_current_function_mode", None)
        if self._paused or current is None or current() is not self:
            return False
        super().__exit__(None, None, None)
        self._paused = True
        return True

    def resume(self) -> None:
        """Back on the stack after :meth:`pause`."""
        if self._paused:
            self._paused = False
            super().__enter__()

    def __exit__(self, *exc_info):
        if self._paused:  # off the stack already (a forward interrupted while paused)
            self._paused = False
            return None
        return super().__exit__(*exc_info)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True  # the call's own error is raised by func, not by this watch
        if kwargs is None:
            kwargs = {}
        # Every torch call (a .dtype read too) passes here: one set lookup decides for most.
        if func in self.WATCHED or (kwargs and "generator" in kwargs):
            try:
                self._inspect(func, args, kwargs)
            except Exception:  # noqa: BLE001, S110 - watching must never break the model
                pass
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            if self.failed is None:
                self.failed = _failed_op(func, args, kwargs, exc)
            raise

    def _inspect(self, func, args: tuple, kwargs: dict) -> None:
        seen = {hazard.kind for hazard in self.found}
        if func is F.scaled_dot_product_attention:
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            if "float-attention-mask" not in seen and mask is not None and added_as_scores(mask):
                detail = f"attn_mask {dtype_name(mask.dtype)} of 0 and 1"
                self.found.append(
                    Hazard("float-attention-mask", "scaled_dot_product_attention", detail)
                )
        elif func in self.TO_NUMPY:
            if "bfloat16-to-numpy" not in seen and args[0].dtype == torch.bfloat16:
                detail = f"a bfloat16 tensor of shape {tuple(args[0].shape)}"
                self.found.append(Hazard("bfloat16-to-numpy", self.TO_NUMPY[func], detail))
        elif isinstance(kwargs.get("generator"), torch.Generator):
            if "generator-device" not in seen:
                self.found += _draw_on_another_device(func, args, kwargs)
        elif func in self.FILLS:
            if "fill-out-of-range" not in seen:
                self.found += _fill_out_of_range(self.FILLS[func], args, kwargs)
        elif func in self.FFTS and "half-fft" not in seen:
            data = kwargs.get("input", args[0] if args else None)
            if isinstance(data, torch.Tensor) and data.dtype in HALF_DTYPES:
                detail = f"input {dtype_name(data.dtype)} on {data.device}"
                self.found.append(Hazard("half-fft", f"torch.fft.{self.FFTS[func]}", detail))


@dataclasses.dataclass(frozen=True)
class FailedOp:
    """A torch call that raised: its name, the tensors it was given, and the code that called it
    (the innermost frame outside torch), inside a module's forward or not."""

    op: str
    operands: tuple[tuple[str, str], ...]  # (dtype, device) of each tensor argument
    file: str
    line: int
    module: nn.Module | None  # the innermost module whose forward was running, if any
    error: str

    def describe(self) -> str:
        given = ", ".join(f"{dtype} on {device}" for dtype, device in self.operands)
        return f"{self.op}({given}) raised at {self.file}:{self.line}"


TORCH_DIR = os.path.dirname(torch.__file__)


def _failed_op(func, args: tuple, kwargs: dict, exc: Exception) -> FailedOp:
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    tensors += [
        item
        for a in (*args, *kwargs.values()) if isinstance(a, (tuple, list))
        for item in a if isinstance(item, torch.Tensor)
    ]  # fmt: skip
    frame, caller, module = sys._getframe(2), None, None
    while frame is not None:
        inside_torch = frame.f_code.co_filename.startswith(TORCH_DIR)
        if caller is None and not inside_torch and not frame.f_locals.get("__tracebackhide__"):
            caller = frame
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "forward" else None
        if caller is not None and isinstance(owner, nn.Module):
            module = owner
            break
        frame = frame.f_back
    name = getattr(func, "__name__", str(func))
    return FailedOp(
        name,
        tuple((dtype_name(t.dtype), str(t.device)) for t in tensors),
        caller.f_code.co_filename if caller else "?",
        caller.f_lineno if caller else 0,
        module,
        f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
    )


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
    detail = f"{value:g} into a {dtype_name(dtype)} tensor (its range ends at +-{largest:g})"
    return [Hazard("fill-out-of-range", _running_module() or name, f"{name}: {detail}")]


def _running_module() -> str:
    """The path of the innermost module whose ``forward`` is running, "" outside any."""
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "forward" else None
        if isinstance(owner, nn.Module):
            return full_path(owner, live_parents())
        frame = frame.f_back
    return ""


class _ProfileWatch:
    """What the watchers that need a ``sys.setprofile`` function share: the hazards found, and
    the profile function set for the block and the previous one put back after it. A subclass
    reads each call (``_on_event``), and knows the function it watches by its name and file:
    nothing is imported for the watch."""

    CALLS: frozenset[str] = frozenset()  # the names of the functions it reads as they start

    def __init__(self):
        self.found: list[Hazard] = []
        self._previous = None

    def _on_event(self, frame, event: str, arg) -> None:
        raise NotImplementedError

    def __enter__(self):
        self._previous = sys.getprofile()
        sys.setprofile(self._on_event)
        return self

    def __exit__(self, *exc_info) -> None:
        sys.setprofile(self._previous)


class ProfileWatches:
    """Context manager: several profile-function watchers (:class:`_ProfileWatch`) under one
    profile function, as ``python -m shared.culprit run`` watches a whole script (a thread has
    one profile function: entered one by one, the last would silence the others).

    Set only where none is set already (a profiler such as cProfile, a coverage tool's): that
    one is left as it is, and ``.displaced`` says these watchers did not watch. At exit the
    profile function is unset only if it is still this one (the script may have set its own)."""

    def __init__(self, *watchers: _ProfileWatch):
        self.watchers = watchers
        # Every Python call and C call outside a forward reaches the profile function: one
        # lookup by the started function's name decides for all but the watched few.
        self._readers: dict[str, list[_ProfileWatch]] = {}
        for watcher in watchers:
            for name in watcher.CALLS:
                self._readers.setdefault(name, []).append(watcher)
        self.displaced = False
        self._thread: int | None = None  # the thread it watches, while entered

    @classmethod
    def of_registry(cls, names=None) -> ProfileWatches:
        """One of each watcher of the registry (``shared.hazards.FINDERS``) that needs a
        profile function; ``names``: only those finders (the harness asks for what a variant's
        audit needs: every Python call outside a forward pays for a profile function)."""
        classes = [globals().get(f.watcher) for name, f in FINDERS.items()
                   if names is None or name in names]  # fmt: skip
        return cls(*(c() for c in classes if isinstance(c, type) and issubclass(c, _ProfileWatch)))

    @property
    def found(self) -> list[Hazard]:
        return [hazard for watcher in self.watchers for hazard in watcher.found]

    def _on_event(self, frame, event: str, arg) -> None:
        if event == "call" and frame.f_code.co_name in self._readers:
            for watcher in self._readers[frame.f_code.co_name]:
                watcher._on_event(frame, event, arg)

    def __enter__(self):
        self.displaced = sys.getprofile() is not None
        self._thread = threading.get_ident()
        if self.watchers and not self.displaced:
            sys.setprofile(self._on_event)
        return self

    def __exit__(self, *exc_info) -> None:
        if sys.getprofile() == self._on_event:
            sys.setprofile(None)
        self._thread = None

    def pause(self) -> None:
        """Unset the profile function for a while (a model's forward pass: none of the watched
        calls happens inside one, and every Python call there would pay for it)."""
        if threading.get_ident() == self._thread and sys.getprofile() == self._on_event:
            sys.setprofile(None)

    def resume(self) -> None:
        """Set it again after :meth:`pause`, unless something else took the slot meanwhile."""
        if self.watchers and threading.get_ident() == self._thread and sys.getprofile() is None:
            sys.setprofile(self._on_event)


class FlatParamWatch(_ProfileWatch):
    """Context manager: record the first FSDP1 unit whose parameters, given to its
    ``FlatParamHandle`` to flatten into one FlatParameter, hold more than one dtype.

    FSDP1 has no hook: a ``sys.setprofile`` function reads the handle's arguments as it is
    built (record only; the FSDP1 module is private, its arguments the same from torch 2.1 to
    2.13). The handle is known by its file, so FSDP1 is not imported for the watch (seconds).
    Slows Python calls while active: watch the wrapping, not a whole training run."""

    CALLS = frozenset({"__init__"})

    def _on_event(self, frame, event: str, arg) -> None:
        code = frame.f_code
        if event != "call" or code.co_name not in self.CALLS or self.found:
            return
        if not code.co_filename.endswith(FLAT_PARAM_FILES):
            return  # FlatParamHandle.__init__(self, params, fully_sharded_module, ...)
        try:
            params = list(frame.f_locals["params"])
            dtypes = Counter(dtype_name(p.dtype) for p in params)
            if len(dtypes) > 1:
                unit = frame.f_locals["fully_sharded_module"]
                where = full_path(unit, live_parents())
                counts = " and ".join(f"{n} {dtype}" for dtype, n in sorted(dtypes.items()))
                self.found.append(Hazard("mixed-flat-param", where, f"{counts} parameters"))
        except Exception:  # noqa: BLE001, S110 - watching must never break the model
            pass


# FSDP1's FlatParamHandle is defined in _flat_param.py (torch >= 2.1), flat_param.py before.
FLAT_PARAM_FILES = tuple(
    f"torch/distributed/fsdp/{name}".replace("/", os.sep)
    for name in ("_flat_param.py", "flat_param.py")
)


class UnscaleWatch(_ProfileWatch):
    """Context manager: record the first ``GradScaler.unscale_`` call on an optimizer already
    unscaled since the last ``update()`` (torch then raises), naming who called it and who
    called the first one: a loop unscaling on each accumulation micro-step, or a library
    (accelerate's ``clip_grad_norm_``) unscaling after the loop did. Also accelerate's
    ``clip_grad_norm_`` called on a micro-step that does not sync: it unscales there where a
    GradScaler exists, and clips partial gradients where none does (the CPU).

    A ``sys.setprofile`` function sees each of these calls as it starts and reads the
    optimizer's stage in the scaler (record only; ``_per_optimizer_states`` holds it from torch
    1.6 to 2.13) or the accelerator's ``sync_gradients``. Both are known by their files, so
    nothing is imported for the watch. Slows Python calls while active, as
    :class:`FlatParamWatch`."""

    CALLS = frozenset({"unscale_", "clip_grad_norm_"})

    def __init__(self):
        super().__init__()
        self._callers: dict[int, str] = {}  # id(optimizer) -> who unscaled it last

    def _on_event(self, frame, event: str, arg) -> None:
        code = frame.f_code
        if event != "call" or code.co_name not in self.CALLS or self.found:
            return
        try:
            if code.co_name == "clip_grad_norm_" and code.co_filename.endswith(ACCELERATOR_FILE):
                self._clip_on_micro_step(frame)
            elif code.co_name == "unscale_" and code.co_filename.endswith(SCALER_FILES):
                self._unscale(frame)
        except Exception:  # noqa: BLE001, S110 - watching must never break the model
            pass

    def _unscale(self, frame) -> None:
        """``GradScaler.unscale_(optimizer)`` where the optimizer is already unscaled."""
        optimizer = frame.f_locals["optimizer"]
        state = frame.f_locals["self"]._per_optimizer_states.get(id(optimizer))
        caller = _where(frame.f_back)
        if state is not None and getattr(state["stage"], "name", "") == "UNSCALED":
            first = self._callers.get(id(optimizer), "?")
            detail = (f"unscale_ called again on {type(optimizer).__name__} before update() "
                      f"(first from {first})")  # fmt: skip
            self.found.append(Hazard("unscale-twice", caller, detail))
        self._callers[id(optimizer)] = caller

    def _clip_on_micro_step(self, frame) -> None:
        """accelerate's ``Accelerator.clip_grad_norm_`` where ``sync_gradients`` is False."""
        if getattr(frame.f_locals.get("self"), "sync_gradients", True) is False:
            detail = "accelerate's clip_grad_norm_ on a micro-step that does not sync"
            self.found.append(Hazard("unscale-twice", _where(frame.f_back), detail))


ACCELERATOR_FILE = "accelerate/accelerator.py".replace("/", os.sep)


# Each GradScaler's unscale_: torch.amp's (from 2.3), torch.cuda.amp's (before), FSDP's
# ShardedGradScaler's own.
SCALER_FILES = tuple(
    name.replace("/", os.sep)
    for name in ("torch/amp/grad_scaler.py", "torch/cuda/amp/grad_scaler.py",
                 "torch/distributed/fsdp/sharded_grad_scaler.py")
)  # fmt: skip


def _where(frame) -> str:
    """A frame as ``path:function``, the path from site-packages on (a script: its name)."""
    path = frame.f_code.co_filename.replace("\\", "/")
    inside = "site-packages/" in path
    path = path.rsplit("site-packages/", 1)[-1] if inside else path.rsplit("/", 1)[-1]
    return f"{path}:{frame.f_code.co_name}"


class TrainingArgsWatch(_ProfileWatch):
    """Context manager: record transformers' ``TrainingArguments`` (or a subclass: trl's
    configs) built with ``bf16`` where transformers finds no device that runs bfloat16 and
    ``use_cpu`` (``no_cuda``) is not set: the setup transformers >= 4.52 refuses.

    A ``sys.setprofile`` function reads the arguments as ``__post_init__`` starts (record only:
    the refusal, if any, still happens there); the method is known by its file, so transformers
    is not imported for the watch. Slows Python calls while active."""

    CALLS = frozenset({"__post_init__"})

    def _on_event(self, frame, event: str, arg) -> None:
        code = frame.f_code
        if event != "call" or code.co_name not in self.CALLS or self.found:
            return
        if not code.co_filename.endswith(TRAINING_ARGS_FILE):
            return
        try:
            from transformers.utils.import_utils import is_torch_bf16_gpu_available

            args = frame.f_locals["self"]
            asked = [name for name in ("bf16", "bf16_full_eval") if getattr(args, name, False)]
            on_cpu = getattr(args, "use_cpu", False) or getattr(args, "no_cuda", False)
            if asked and not on_cpu and not is_torch_bf16_gpu_available():
                detail = f"{asked[0]}=True, use_cpu unset, and no device that runs bfloat16"
                self.found.append(Hazard("bf16-without-device", type(args).__name__, detail))
        except Exception:  # noqa: BLE001, S110 - watching must never break the model
            pass


# transformers' TrainingArguments (its __post_init__ holds the bf16 check, its own test for a
# device with bfloat16 is is_torch_bf16_gpu_available: CUDA, XPU, NPU, MPS ...).
TRAINING_ARGS_FILE = "transformers/training_args.py".replace("/", os.sep)
