"""Guards that watch each module call while a model runs: :class:`MismatchGuard` (the first module
fed another dtype or device than its weights) and :class:`NonFiniteGuard` (the first module whose
output became inf/NaN from finite inputs).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import sys
from collections.abc import Iterator

import torch
from torch import nn
from torch.nn.modules.module import (
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_parameter_registration_hook,
)

from shared.culprit.finders import Hazard
from shared.culprit.tensors import (
    TORCH_ERROR_NAMES,
    dtype_name,
    full_path,
    live_parents,
    tensors_of,
)

# --- guard -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Mismatch:
    """A module called with a tensor whose dtype or device differs from its own parameters."""

    module: str  # e.g. "TinyMiniCPMV.resampler.attn"
    module_class: str
    role: str  # the forward argument: "query", "hidden_states", "input 0", "batch['x']"
    input_dtype: str
    input_device: str
    parameter: str
    parameter_dtype: str
    parameter_device: str

    def describe(self) -> str:
        """One line, with dtypes named as torch names them in its errors."""
        return (
            f"{self.module} ({self.module_class}): {self.role} "
            f"{_error_name(self.input_dtype)} on {self.input_device} vs {self.parameter} "
            f"{_error_name(self.parameter_dtype)} on {self.parameter_device}"
        )


_DISABLE_TORCH_FUNCTION = getattr(torch._C, "DisableTorchFunction", None)


def unwatched():
    """A guard's own tensor checks run outside any TorchFunctionMode (the OpWatch of a
    diagnosis): the mode is there to watch the script's calls, not the guards' own."""
    if _DISABLE_TORCH_FUNCTION is None:
        return contextlib.nullcontext()
    return _DISABLE_TORCH_FUNCTION()


def _no_hook(*args) -> None:
    """What a deep copy or a pickle of a watched module holds where the watch hooked it."""


def _inert():
    return _no_hook


class OwnHook(functools.partial):
    """A hook of the watch's own on one module: ``OwnHook(call)``. A deep copy of the module (a
    float32 reference made with ``copy.deepcopy``) or its pickle (``torch.save`` of a whole model)
    holds :func:`_no_hook` in its place: the watch, whose state holds the run's tensors, is never
    copied or saved with the script's model (a copy is adopted, hooks of its own, at its first
    call). A partial, so that torch's call of it adds no Python frame (about 0.2 us a call)."""

    __slots__ = ()

    def __deepcopy__(self, memo):
        return _no_hook

    def __reduce__(self):
        return _inert, ()


def _error_name(dtype: str) -> str:
    return TORCH_ERROR_NAMES.get(dtype, dtype)


class DtypeDeviceMismatch(RuntimeError):
    """Raised by ``MismatchGuard(raise_on_mismatch=True)`` at the first mismatch."""

    def __init__(self, mismatch: Mismatch):
        self.mismatch = mismatch
        to_param, to_input = [], []
        if mismatch.input_device != mismatch.parameter_device:
            to_param.append(repr(mismatch.parameter_device))
            to_input.append(repr(mismatch.input_device))
        if mismatch.input_dtype != mismatch.parameter_dtype:
            to_param.append(f"torch.{mismatch.parameter_dtype}")
            to_input.append(f"torch.{mismatch.input_dtype}")
        super().__init__(
            f"{mismatch.describe()}. Cast the module or the input: "
            f"module.to({', '.join(to_input)}) / input.to({', '.join(to_param)}); "
            "format_audit(model) shows which tensors differ from the rest of the model."
        )


def as_record(found: Mismatch | NonFinite) -> dict:
    """A mismatch or a producer as plain JSON-serialisable data, with its one-line description."""
    return {**dataclasses.asdict(found), "description": found.describe()}


class _ModuleWatch:
    """Hooks on every module a forward reaches: ``model``'s from the start (named by their path
    from it), any other module when first called (named by its class, its submodules below it).
    Subclasses say which hook each module gets (``_hook``) and what a first call does."""

    def __init__(self, model: nn.Module | None = None):
        self.model = model
        self._names: dict[nn.Module, str] = {}  # the modules that have our own hook
        self._handles: list = []

    def __enter__(self):
        # The global pre-hook sees every module but not keyword arguments, so it only finds
        # new modules; each one found gets a hook of its own that sees args and kwargs.
        self._handles.append(register_module_forward_pre_hook(self._on_any_call))
        if self.model is not None:
            self._adopt(self.model)
        return self

    def __exit__(self, *exc_info) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._names.clear()

    def _on_any_call(self, module: nn.Module, args: tuple) -> None:
        if module not in self._names:
            self._adopt(module)
            self._on_first_call(module, args)

    def _on_first_call(self, module: nn.Module, args: tuple) -> None:
        """A module met for the first time (its own hook runs from its next call on)."""

    def _adopt(self, root: nn.Module) -> None:
        for path, module in root.named_modules(prefix=type(root).__name__):
            if module not in self._names:
                self._names[module] = path
                handle = self._hook(module)
                if handle is not None:
                    self._handles.append(handle)

    def _hook(self, module: nn.Module):
        raise NotImplementedError


class MismatchGuard(_ModuleWatch):
    """Context manager: check every module call's tensor inputs against the module's own params.

    A module is judged only if it has floating-point parameters of its own (``recurse=False``);
    an input is a mismatch when its device, or (floating-point inputs only) its dtype, matches
    none of them. Inputs are the positional and keyword arguments, one level into tuples, lists
    and dicts. Not judged while autocast is enabled for the input's device type: autocast
    mixes dtypes on purpose and casts the inputs inside the ops.

    Module paths: give ``model`` to name its modules from the start ("TinyMiniCPMV.resampler.attn"
    even when a method calls ``self.resampler`` directly). Other modules are named when first
    called: a module called outside any named one is a root, named by its class, and its
    submodules below it. (That first call is checked by torch's global pre-hook, which gets
    positional arguments only; keyword arguments are seen from the next call on.)

    ``raise_on_mismatch=False`` records: ``.mismatches`` (in call order) and ``.first``.
    ``raise_on_mismatch=True`` raises :class:`DtypeDeviceMismatch` before the module runs.
    """

    def __init__(self, model: nn.Module | None = None, *, raise_on_mismatch: bool = False):
        super().__init__(model)
        self.raise_on_mismatch = raise_on_mismatch
        self.mismatches: list[Mismatch] = []
        self.errors: list[str] = []  # checks that failed themselves (record mode), for the record
        self._culprits: list[nn.Module] = []  # the module of each mismatch, for resolve_paths
        self.first_input: torch.Tensor | None = None  # the tensor of the first mismatch

    @property
    def first(self) -> Mismatch | None:
        return self.mismatches[0] if self.mismatches else None

    @property
    def found(self) -> list[Hazard]:
        """The first mismatch, as the hazard every watcher's ``.found`` lists."""
        first = self.first
        return [Hazard("mismatched-input", first.module, first.describe())] if first else []

    def _on_first_call(self, module: nn.Module, args: tuple) -> None:
        self._check(module, args, {})  # the positional inputs of the call that found it

    def _hook(self, module: nn.Module):
        return module.register_forward_pre_hook(OwnHook(self._on_own_call), with_kwargs=True)

    def _on_own_call(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        self._check(module, args, kwargs)

    def _check(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        try:
            with unwatched():
                if _may_mismatch(module, args, kwargs):
                    self._judge(module, args, kwargs)
        except DtypeDeviceMismatch:
            raise
        except Exception as exc:  # noqa: BLE001 - watching must never break the model it watches
            if self.raise_on_mismatch:
                raise
            self.errors.append(f"{self._names.get(module, type(module).__name__)}: {exc!r}")

    def _judge(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        for role, tensor, name, param in mismatched_inputs(module, args, kwargs):
            mismatch = Mismatch(
                self._names[module], type(module).__name__, role,
                dtype_name(tensor.dtype), str(tensor.device),
                name, dtype_name(param.dtype), str(param.device),
            )  # fmt: skip
            if self.raise_on_mismatch:
                raise DtypeDeviceMismatch(mismatch)
            if not self.mismatches:
                self.first_input = tensor  # what was fed: where it came from tells the cause
            self.mismatches.append(mismatch)
            self._culprits.append(module)

    @property
    def first_module(self) -> nn.Module | None:
        return self._culprits[0] if self._culprits else None

    def resolve_paths(self) -> None:
        """Re-name the recorded mismatches by their path from the outermost model holding them.

        A method such as ``vae.decode`` calls ``self.post_quant_conv`` directly, so the hooks
        met the conv before (or without) its model and could only call it "Conv2d". Called while
        the models are still alive, this finds each culprit's parents among the live modules.
        """
        parents = live_parents()
        for index, module in enumerate(self._culprits):
            path = full_path(module, parents)
            self.mismatches[index] = dataclasses.replace(self.mismatches[index], module=path)


def mismatched_inputs(module: nn.Module, args: tuple, kwargs: dict) -> Iterator[tuple]:
    """The one mismatch check: (role, tensor, parameter name, parameter) for each tensor input of
    a call whose device, or (floating-point inputs) dtype, matches none of ``module``'s own
    floating-point parameters. Skipped while autocast is on for the input's device type (it
    mixes dtypes on purpose)."""
    # In a module accelerate dispatched (its `_hf_hook`), weights on "meta" are placeholders
    # that the hook loads just before the call: nothing a real input could mismatch.
    placeholders = hasattr(module, "_hf_hook")
    params = [
        (name, param)
        for name, param in module.named_parameters(recurse=False)
        if param.is_floating_point() and not (placeholders and param.device.type == "meta")
    ]
    if not params:
        return
    dtypes = {param.dtype for _, param in params}
    devices = {param.device for _, param in params}
    for role, tensor in _tensor_inputs(module, args, kwargs):
        if _autocast_enabled(tensor.device.type):
            continue
        dtype_differs = tensor.is_floating_point() and tensor.dtype not in dtypes
        if not dtype_differs and tensor.device in devices:
            continue
        # Name the first parameter that disagrees in what differs.
        name, param = next(
            (name, param)
            for name, param in params
            if param.device != tensor.device or (dtype_differs and param.dtype != tensor.dtype)
        )
        yield role, tensor, name, param


# Module classes whose own parameters are their ``_parameters`` (named_parameters not
# overridden, no accelerate hook on the class): the ones _may_mismatch can judge quickly.
_PLAIN_CLASSES: dict[type, bool] = {}


def _plain(kind: type) -> bool:
    plain = _PLAIN_CLASSES.get(kind)
    if plain is None:
        plain = _PLAIN_CLASSES[kind] = (
            kind.named_parameters is nn.Module.named_parameters
            and kind._named_members is nn.Module._named_members
            and not hasattr(kind, "_hf_hook")
        )
    return plain


def _may_mismatch(module: nn.Module, args: tuple, kwargs: dict) -> bool:
    """A quick filter run on every call before :func:`mismatched_inputs`: False only where that
    check would find nothing. Every tensor argument (a superset of the tensors that check binds
    to the signature: one level into every argument) is compared with the module's first
    floating-point parameter: one that agrees with it in device and (floating-point tensors)
    dtype is no mismatch; any other, the exact check decides (another parameter may agree). It
    never binds the forward's signature; the exact check then names roles."""
    if not _plain(type(module)) or "_hf_hook" in module.__dict__:
        return True  # placeholders on "meta" or parameters found elsewhere: the exact check
    for first in module._parameters.values():
        if first is not None and first.is_floating_point():
            break
    else:
        return False
    dtype, device = first.dtype, first.device
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            items = (value,)
        elif isinstance(value, (tuple, list)):
            items = value
        elif isinstance(value, dict):
            items = value.values()
        else:
            continue
        for tensor in items:
            if (
                isinstance(tensor, torch.Tensor)
                and (tensor.device != device
                     or tensor.dtype != dtype and tensor.is_floating_point())
                and not _autocast_enabled(tensor.device.type)
            ):  # fmt: skip
                return True
    return False


def _autocast_enabled(device_type: str) -> bool:
    try:
        return torch.is_autocast_enabled(device_type)
    except (TypeError, RuntimeError):
        # torch < 2.4 takes no device argument; unknown device types (meta) raise.
        if device_type == "cpu":
            return torch.is_autocast_cpu_enabled()
        return device_type == "cuda" and torch.is_autocast_enabled()


def _tensor_inputs(module: nn.Module, args: tuple, kwargs: dict) -> Iterator[tuple]:
    """(role, tensor) for each tensor argument, one level into tuples, lists and dicts.

    Roles are the forward's parameter names when the call binds to its signature, else
    "input N" for positional arguments and the keyword for keyword arguments.
    """
    try:
        signature = inspect.signature(module.forward)
        bound = signature.bind_partial(*args, **kwargs).arguments
        arguments = {}
        for name, value in bound.items():
            if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                arguments.update(value)  # **kwargs: by their own names
            else:
                arguments[name] = value
    except (TypeError, ValueError):  # no signature, or the call does not bind to it
        arguments = {**{f"input {i}": arg for i, arg in enumerate(args)}, **kwargs}
    for role, value in arguments.items():
        if isinstance(value, torch.Tensor):
            yield role, value
        elif isinstance(value, (tuple, list, dict)):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(item, torch.Tensor):
                    yield f"{role}[{key!r}]", item


# --- non-finite values: the producer, not its passers-on ---------------------------------------

FLOAT16_MAX = torch.finfo(torch.float16).max


@dataclasses.dataclass(frozen=True)
class NonFinite:
    """The first module whose output held inf or NaN while all its inputs were finite."""

    module: str
    module_class: str
    output_dtype: str
    nonfinite: int  # elements of the output that are inf or NaN
    elements: int
    input_absmax: float  # the largest |x| among the inputs (all finite)
    input_dtype: str

    def describe(self) -> str:
        limit = " (beyond float16's range)" if self.input_absmax > FLOAT16_MAX else ""
        return (
            f"{self.module} ({self.module_class}): output {self.output_dtype} with "
            f"{self.nonfinite} of {self.elements} elements inf/NaN, from finite "
            f"{self.input_dtype} inputs of max |x| {self.input_absmax:.3g}{limit}"
        )


@dataclasses.dataclass(frozen=True)
class NonFiniteGradient:
    """The first parameter whose gradient held inf or NaN, in the order backward computes them
    (from the loss toward the inputs: the first one is nearest where the gradient went bad)."""

    parameter: str  # module path, then the parameter's own name
    dtype: str
    nonfinite: int
    elements: int

    def describe(self) -> str:
        return (
            f"{self.parameter}: gradient {self.dtype} with {self.nonfinite} of {self.elements} "
            f"elements inf/NaN (the first non-finite gradient of the backward pass)"
        )


class NonFiniteGuard(_ModuleWatch):
    """Context manager: name the first module that *produced* inf or NaN (its inputs finite),
    not the modules that merely passed it on (as fairseq's NanDetector and transformers'
    DebugUnderflowOverflow look for). Record only: the model runs as it would.

    Forward hooks fire when a module returns, innermost first, so the first module seen with a
    non-finite output and finite inputs is the producer. ``.first`` is it, or None; ``model``
    names modules from the start (else they are named by their class when first called).
    """

    def __init__(self, model: nn.Module | None = None, gradients: bool = False):
        super().__init__(model)
        self.first: NonFinite | None = None
        self._module: nn.Module | None = None
        # The last output judged finite (one tensor held) and its in-place version then.
        self._last_finite: torch.Tensor | None = None
        self._last_version = -1
        # Training NaNs often start in the backward pass (fairseq's NanDetector watches both).
        self.gradients = gradients
        self.first_gradient: NonFiniteGradient | None = None

    def _hook(self, module: nn.Module):
        self._handles += self.gradient_hooks(module)
        return module.register_forward_hook(OwnHook(self._on_return), with_kwargs=True)

    def gradient_hooks(self, module: nn.Module) -> list:
        """With ``gradients``: a hook on each of ``module``'s own trainable parameters."""
        if not self.gradients:
            return []
        return [
            parameter.register_hook(self._gradient_check(f"{self._names[module]}.{name}"))
            for name, parameter in module.named_parameters(recurse=False)
            if parameter.requires_grad
        ]

    def _gradient_check(self, where: str):
        def check(grad: torch.Tensor) -> None:
            if self.first_gradient is not None:
                return
            with unwatched():
                if _finite(grad):
                    return
                bad = int((~torch.isfinite(grad)).sum())
            self.first_gradient = NonFiniteGradient(
                where, dtype_name(grad.dtype), bad, grad.numel()
            )

        return check

    def _on_return(self, module: nn.Module, args: tuple, kwargs: dict, output) -> None:
        if output is None or self.first is not None or type(module) in FINITE_FROM_FINITE or (
                type(module) in DROPOUTS and not module.training):  # fmt: skip
            return  # None: the call raised, nothing was returned to judge
        if output is self._last_finite and output._version == self._last_version:
            return  # judged already, unchanged: a container handing on its child's output
        with unwatched():
            self._judge_output(module, args, kwargs, output)

    def _judge_output(self, module: nn.Module, args: tuple, kwargs: dict, output) -> None:
        try:
            if isinstance(output, torch.Tensor):  # the common case, without a list
                if not output.is_floating_point() or _finite(output):
                    self._last_finite, self._last_version = output, output._version
                    return
                bad = [output]
            else:
                bad = [t for t in tensors_of(output) if t.is_floating_point() and not _finite(t)]
                if not bad:
                    return
            inputs = [t for _, t in _tensor_inputs(module, args, kwargs) if t.is_floating_point()]
            if any(not _finite(t) for t in inputs):
                return  # passed on, not produced here
            largest = max(inputs, key=lambda t: float(t.abs().max()) if t.numel() else 0.0,
                          default=None)  # fmt: skip
            self.first = NonFinite(
                self._names[module], type(module).__name__, dtype_name(bad[0].dtype),
                int((~torch.isfinite(bad[0])).sum()), bad[0].numel(),
                float(largest.abs().max()) if largest is not None and largest.numel() else 0.0,
                dtype_name(largest.dtype) if largest is not None else "-",
            )  # fmt: skip
            self._module = module
        except Exception:  # noqa: BLE001 - watching must never break the model it watches
            return

    @property
    def found(self) -> list[Hazard]:
        """The first inf/NaN producer, as the hazard every watcher's ``.found`` lists."""
        first = self.first
        return [Hazard("non-finite-output", first.module, first.describe())] if first else []

    def resolve_paths(self) -> None:
        """Name the producer by its path from the outermost live model (see MismatchGuard)."""
        if self.first is None or self._module is None:
            return
        path = full_path(self._module, live_parents())
        self.first = dataclasses.replace(self.first, module=path)


class GuardedCalls(_ModuleWatch):
    """Context manager: a :class:`MismatchGuard`'s and a :class:`NonFiniteGuard`'s checks on
    every module call, and a caller's ``entering(module)`` and ``leaving(module, args, kwargs,
    output)`` around each outermost one, under the fewest hooks (the guards are not entered
    themselves): one global pre-hook (a new module is adopted; calls are counted in), one global
    forward hook (every call's output judged; counted out) and, on a module with parameters of
    its own, a pre-hook that sees its keyword arguments too (the mismatch check). Torch calls
    each hook in Python: entered one by one, the guards and the caller would hold six a module
    call, and on a small model those calls cost more than the checks."""

    def __init__(self, guard: MismatchGuard, values: NonFiniteGuard, entering, leaving):
        super().__init__()
        self.guard, self.values = guard, values
        guard._names = values._names = self._names  # the modules met, named once for all
        self._entering, self._leaving = entering, leaving
        self._checked: set[nn.Module] = set()  # the modules with a mismatch pre-hook
        self.depth = 0  # module calls in progress

    def __enter__(self):
        super().__enter__()
        # always_call: a forward that raised is left too (torch then gives args and no output)
        after = self._after if "with_kwargs" in GLOBAL_FORWARD_HOOK_OPTIONS else self._after_old
        self._handles += [
            register_module_forward_hook(after, **dict.fromkeys(GLOBAL_FORWARD_HOOK_OPTIONS, True)),
            register_module_parameter_registration_hook(self._on_parameter),
        ]
        return self

    def __exit__(self, *exc_info) -> None:
        super().__exit__(*exc_info)
        self._checked.clear()

    def _on_any_call(self, module: nn.Module, args: tuple) -> None:
        if "always_call" not in GLOBAL_FORWARD_HOOK_OPTIONS:  # a raised call was never left
            self.depth = _module_calls_under(sys._getframe(1))
        if not self.depth:
            self._entering(module)
        self.depth += 1
        if module not in self._names:
            self._adopt(module)
            self.guard._check(module, args, {})  # its own pre-hook runs from its next call on

    def _hook(self, module: nn.Module):
        self._handles += self.values.gradient_hooks(module)
        return self.parameters_registered(module)

    def parameters_registered(self, module: nn.Module):
        """A module met has parameters of its own (at adoption, or registered later): its
        calls are checked against them from now on (the handle, or None)."""
        own = module._parameters or not _plain(type(module))  # found elsewhere: the exact check
        if module in self._checked or module not in self._names or not own:
            return None
        self._checked.add(module)
        return module.register_forward_pre_hook(OwnHook(self.guard._check), with_kwargs=True)

    def _on_parameter(self, module: nn.Module, name: str, parameter) -> None:
        handle = self.parameters_registered(module)
        if handle is not None:
            self._handles.append(handle)

    def _after_old(self, module: nn.Module, args: tuple, output) -> None:
        # An older torch gives a global forward hook no keyword arguments, after a return as
        # after an exception: they are read from its caller's frame.
        self._after(module, args, _call_kwargs(module, sys._getframe(1)), output)

    def _after(self, module: nn.Module, args: tuple, *rest) -> None:
        # (kwargs, output) after a return; torch gives (output) alone after an exception.
        kwargs, output = rest if len(rest) == 2 else ({}, None)
        try:
            self.values._on_return(module, args, kwargs, output)
        finally:  # the calls in progress are counted out whatever a check did
            if self.depth:
                self.depth -= 1
            if not self.depth:
                if len(rest) != 2:  # raised: what the script gave by keyword, from torch's frame
                    kwargs = _call_kwargs(module, sys._getframe(1))
                self._leaving(module, args, kwargs, output)


# The options torch's global forward hook takes: an older torch has fewer (2.0.1 neither,
# 2.1.2 and 2.5.1 always_call alone, 2.6.0 and 2.7.0 both: read in their sources).
GLOBAL_FORWARD_HOOK_OPTIONS = frozenset(
    inspect.signature(register_module_forward_hook).parameters) & {"with_kwargs", "always_call"}


_CALL_IMPL = nn.Module._call_impl.__code__


def _module_calls_under(frame) -> int:
    """How many module calls are in progress around the one a global pre-hook called from
    ``frame`` sees (torch 2.0's global forward hook is not called after an exception, so the
    calls it left are not counted out: the stack counts them)."""
    calls = -1  # the call being entered has its own _call_impl
    while frame is not None:
        calls += frame.f_code is _CALL_IMPL
        frame = frame.f_back
    return max(calls, 0)


def _call_kwargs(module: nn.Module, frame) -> dict:
    """The keyword arguments of ``module``'s call, where torch hands a global forward hook none
    (after an exception; an older torch always): the hook's caller holds them, torch's
    ``_call_impl`` or (torch 2.5's return path) the ``inner`` it defines."""
    try:
        if frame.f_code.co_name in ("_call_impl", "inner") and frame.f_locals.get("self") is module:
            kwargs = frame.f_locals.get("kwargs")
            return kwargs if isinstance(kwargs, dict) else {}
    except Exception:  # noqa: BLE001, S110 - another torch's frame: the arguments unknown
        pass
    return {}


def _finite(tensor: torch.Tensor) -> bool:
    """No element of ``tensor`` is inf or NaN. Its sum is one op where ``isfinite(...).all()`` is
    several (some times slower on the CPU): any inf or NaN makes the sum inf or NaN, so a finite
    sum decides; a sum that overflowed (or raised), or a subclass's own sum, element by element."""
    try:
        if type(tensor) in _PLAIN_TENSORS and math.isfinite(tensor.sum().item()):
            return True
    except Exception:  # noqa: BLE001, S110 - a dtype without a sum: the long way
        pass
    return bool(torch.isfinite(tensor).all())


_PLAIN_TENSORS = (torch.Tensor, nn.Parameter)

# torch's own modules whose output is finite wherever their input is (bounded, or at most the
# input's magnitude): they never produce the first inf or NaN, so their outputs go unjudged.
# Not Dropout (training divides by 1 - p, which can pass float16's largest value), ELU or SELU
# (scaled), LeakyReLU (any slope).
FINITE_FROM_FINITE = frozenset({
    nn.Identity, nn.Flatten, nn.Unflatten, nn.ReLU, nn.ReLU6, nn.GELU, nn.SiLU, nn.Mish,
    nn.Tanh, nn.Sigmoid, nn.Hardtanh, nn.Hardsigmoid, nn.Hardswish, nn.Softsign, nn.Softmax,
    nn.Softmin,
})
# torch's dropouts, which return their input as it is outside training (nothing produced there).
DROPOUTS = frozenset({nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout,
                      nn.FeatureAlphaDropout})
