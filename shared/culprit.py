"""Find where a dtype/device mismatch starts: audit a model's tensors, guard its calls.

- :func:`audit` / :func:`format_audit`: every submodule's own parameters and buffers grouped
  by (device, dtype), with the groups that differ from the rest of the model marked.
- :class:`MismatchGuard`: while active, checks each module call's tensor inputs against that
  module's own parameters, so the first module fed the wrong dtype or device is named before
  the error surfaces deep inside torch.
- :class:`NonFiniteGuard`: for a failure that raises nothing, the first module whose output
  became inf or NaN while its inputs were finite: the producer, not a passer-on.
- :func:`as_record`: a mismatch (or a non-finite producer) as a JSON-serialisable dict.
- :func:`hazards`, :func:`pipeline_hazards`, :func:`generator_hazards`,
  :func:`optimizer_hazards`: the patterns the gallery's cases document (``shared.hazards``),
  found in a model, a pipeline's components and generators, or an optimizer; :class:`OpWatch`,
  :class:`FlatParamWatch` and :func:`seen_hazards`: those that show while it runs.

Public torch APIs (module hooks, a TorchFunctionMode), and one profile function that reads
the arguments of FSDP1's private FlatParamHandle; nothing in torch or the libraries is patched.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import inspect
import re
import sys
from collections import Counter
from collections.abc import Iterator

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.overrides import TorchFunctionMode

from shared.hazards import FINDERS, HAZARDS

# The names torch uses for dtypes in its own errors ("got Float and BFloat16").
TORCH_ERROR_NAMES = {
    "float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16"
}  # fmt: skip
HALF_DTYPES = (torch.float16, torch.bfloat16, torch.complex32)
KEEP_IN_FP32_ATTRIBUTES = ("_keep_in_fp32_modules", "_keep_in_fp32_modules_strict")


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# --- audit -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AuditRow:
    """The direct tensors of one submodule that share a kind, device and dtype."""

    module: str  # path as in model.named_modules(); "" is the model itself
    kind: str  # "param" or "buffer"
    device: str
    dtype: str
    names: tuple[str, ...]
    elements: int
    odd: bool = False  # (device, dtype) differs from the model's majority, for no stated reason
    note: str = ""  # what differs, and why when the model says so (_keep_in_fp32_modules)


def audit(model: nn.Module) -> list[AuditRow]:
    """One row per (submodule, param/buffer, device, dtype) over each submodule's own tensors.

    The majority is the (device, dtype) holding most floating-point elements. Rows differing
    from it are noted; integer tensors (token ids, counters) are judged by device only. Rows
    that are float32 where the model lists them in ``_keep_in_fp32_modules`` (transformers
    keeps those float32 on purpose) are noted as such, not marked odd.
    """
    groups: dict[tuple, list[tuple[str, torch.Tensor]]] = {}
    for path, module in model.named_modules():
        for kind, tensors in (
            ("param", module.named_parameters(recurse=False)),
            ("buffer", module.named_buffers(recurse=False)),
        ):
            for name, tensor in tensors:
                key = (path, kind, str(tensor.device), _dtype_name(tensor.dtype))
                groups.setdefault(key, []).append((name, tensor))
    rows = [
        AuditRow(*key, tuple(name for name, _ in tensors), sum(t.numel() for _, t in tensors))
        for key, tensors in groups.items()
    ]
    majority, kept_by = _majority(rows), _keep_in_fp32_entries(model)
    return [dataclasses.replace(row, **_judge(row, majority, kept_by)) for row in rows]


def _is_floating(dtype: str) -> bool:
    return getattr(torch, dtype).is_floating_point


def _majority(rows: list[AuditRow]) -> tuple[str, str]:
    """The (device, dtype) with most floating-point elements (any elements if none)."""
    elements: Counter = Counter()
    for row in [row for row in rows if _is_floating(row.dtype)] or rows:
        elements[row.device, row.dtype] += row.elements
    return elements.most_common(1)[0][0] if elements else ("-", "-")


def _keep_in_fp32_entries(model: nn.Module) -> dict[str, str]:
    """Entry -> the attribute listing it, from the model and its PreTrainedModel parts."""
    entries = {}
    for module in model.modules():
        for attribute in KEEP_IN_FP32_ATTRIBUTES:
            entries.update(dict.fromkeys(getattr(module, attribute, None) or (), attribute))
    return entries


def _judge(row: AuditRow, majority: tuple[str, str], kept_by: dict[str, str]) -> dict:
    """The row's ``odd`` and ``note``: what differs from the majority, and why if stated."""
    majority_device, majority_dtype = majority
    what, model = [], []
    if _is_floating(row.dtype) and row.dtype != majority_dtype:
        what.append(row.dtype)
        model.append(majority_dtype)
    if row.device != majority_device:
        what.append(f"on {row.device}")
        model.append(majority_device)
    if not what:
        return {}
    seen = f"{' '.join(what)} in a {' '.join(model)} model"
    # An entry names a module or tensor path: match it as whole dotted parts of every name.
    listed_in = {
        attribute
        for entry, attribute in kept_by.items()
        if all(f".{entry}." in f".{row.module}.{name}." for name in row.names)
    }
    if listed_in and row.dtype == "float32" and row.device == majority_device:
        return {"note": f"{seen}: kept float32 on purpose by {' and '.join(sorted(listed_in))}"}
    return {"odd": True, "note": f"odd: {seen}"}


def format_audit(model: nn.Module, odd_only: bool = False) -> str:
    """The audit as a text table; noted rows end with "<-- ...". ``odd_only``: noted rows."""
    rows = audit(model)
    total = sum(row.elements for row in rows)
    device, dtype = _majority(rows)
    lines = [
        f"{type(model).__name__}: {total:,} elements in "
        f"{sum(len(row.names) for row in rows)} tensors, mostly {dtype} on {device}"
    ]
    if kept_by := _keep_in_fp32_entries(model):
        for attribute in KEEP_IN_FP32_ATTRIBUTES:
            if listed := [entry for entry, by in kept_by.items() if by == attribute]:
                lines.append(f"{attribute}: {', '.join(listed)}")
    shown = [row for row in rows if row.note or not odd_only]
    header = ("module", "kind", "device", "dtype", "elements", "tensors")
    cells = [
        (row.module or "(root)", row.kind, row.device, row.dtype, f"{row.elements:,}",
         ", ".join(row.names))
        for row in shown
    ]  # fmt: skip
    widths = [max(len(cell[i]) for cell in [header, *cells]) for i in range(len(header))]
    for cell, row in zip([header, *cells], [None, *shown], strict=True):
        line = "  ".join(
            text.ljust(width) for text, width in zip(cell, widths, strict=True)
        ).rstrip()
        lines.append(f"{line}  <-- {row.note}" if row and row.note else line)
    odd = sum(row.odd for row in rows)
    lines.append(f"{odd} odd group{'s' * (odd != 1)} of {len(rows)}")
    return "\n".join(lines)


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
                self._handles.append(self._hook(module))

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

    @property
    def first(self) -> Mismatch | None:
        return self.mismatches[0] if self.mismatches else None

    def _on_first_call(self, module: nn.Module, args: tuple) -> None:
        self._check(module, args, {})  # the positional inputs of the call that found it

    def _hook(self, module: nn.Module):
        return module.register_forward_pre_hook(self._on_own_call, with_kwargs=True)

    def _on_own_call(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        self._check(module, args, kwargs)

    def _check(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        try:
            self._judge(module, args, kwargs)
        except DtypeDeviceMismatch:
            raise
        except Exception as exc:  # noqa: BLE001 - watching must never break the model it watches
            if self.raise_on_mismatch:
                raise
            self.errors.append(f"{self._names.get(module, type(module).__name__)}: {exc!r}")

    def _judge(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
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
            mismatch = Mismatch(
                self._names[module], type(module).__name__, role,
                _dtype_name(tensor.dtype), str(tensor.device),
                name, _dtype_name(param.dtype), str(param.device),
            )  # fmt: skip
            if self.raise_on_mismatch:
                raise DtypeDeviceMismatch(mismatch)
            self.mismatches.append(mismatch)
            self._culprits.append(module)

    def resolve_paths(self) -> None:
        """Re-name the recorded mismatches by their path from the outermost model holding them.

        A method such as ``vae.decode`` calls ``self.post_quant_conv`` directly, so the hooks
        met the conv before (or without) its model and could only call it "Conv2d". Called while
        the models are still alive, this finds each culprit's parents among the live modules.
        """
        parents = _live_parents()
        for index, module in enumerate(self._culprits):
            full_path = _full_path(module, parents)
            self.mismatches[index] = dataclasses.replace(self.mismatches[index], module=full_path)


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


class NonFiniteGuard(_ModuleWatch):
    """Context manager: name the first module that *produced* inf or NaN (its inputs finite),
    not the modules that merely passed it on (as fairseq's NanDetector and transformers'
    DebugUnderflowOverflow look for). Record only: the model runs as it would.

    Forward hooks fire when a module returns, innermost first, so the first module seen with a
    non-finite output and finite inputs is the producer. ``.first`` is it, or None; ``model``
    names modules from the start (else they are named by their class when first called).
    """

    def __init__(self, model: nn.Module | None = None):
        super().__init__(model)
        self.first: NonFinite | None = None
        self._module: nn.Module | None = None

    def _hook(self, module: nn.Module):
        return module.register_forward_hook(self._on_return, with_kwargs=True)

    def _on_return(self, module: nn.Module, args: tuple, kwargs: dict, output) -> None:
        if self.first is not None:
            return
        try:
            outputs = [t for t in _tensors(output) if t.is_floating_point()]
            bad = [t for t in outputs if not bool(torch.isfinite(t).all())]
            if not bad:
                return
            inputs = [t for _, t in _tensor_inputs(module, args, kwargs) if t.is_floating_point()]
            if any(not bool(torch.isfinite(t).all()) for t in inputs):
                return  # passed on, not produced here
            largest = max(inputs, key=lambda t: float(t.abs().max()) if t.numel() else 0.0,
                          default=None)  # fmt: skip
            self.first = NonFinite(
                self._names[module], type(module).__name__, _dtype_name(bad[0].dtype),
                int((~torch.isfinite(bad[0])).sum()), bad[0].numel(),
                float(largest.abs().max()) if largest is not None and largest.numel() else 0.0,
                _dtype_name(largest.dtype) if largest is not None else "-",
            )  # fmt: skip
            self._module = module
        except Exception:  # noqa: BLE001 - watching must never break the model it watches
            return

    def resolve_paths(self) -> None:
        """Name the producer by its path from the outermost live model (see MismatchGuard)."""
        if self.first is None or self._module is None:
            return
        path = _full_path(self._module, _live_parents())
        self.first = dataclasses.replace(self.first, module=path)


def _tensors(value) -> Iterator[torch.Tensor]:
    """The tensors of a module's output: a tensor, or one level into tuples, lists, dicts and
    ModelOutput-like objects."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        yield from (v for v in value.values() if isinstance(v, torch.Tensor))
    elif isinstance(value, (tuple, list)):
        yield from (v for v in value if isinstance(v, torch.Tensor))


def _live_parents() -> dict[nn.Module, tuple[nn.Module, str]]:
    """Each live module's parent and its name there, from every module alive now."""
    parents: dict[nn.Module, tuple[nn.Module, str]] = {}
    for candidate in gc.get_objects():
        # type(), not isinstance(): no attribute lookups on arbitrary (deprecated) objects
        if issubclass(type(candidate), nn.Module):
            for name, child in candidate.named_children():
                parents.setdefault(child, (candidate, name))
    return parents


def _full_path(module: nn.Module, parents: dict[nn.Module, tuple[nn.Module, str]]) -> str:
    """``module``'s path from the outermost live model holding it ("Model.block.0.wo")."""
    path, seen = [], {module}
    while module in parents and parents[module][0] not in seen:
        module, name = parents[module]
        path.insert(0, name)
        seen.add(module)
    return ".".join([type(module).__name__, *path])


# --- hazards: the patterns the gallery's cases document, found in a model ----------------------

# Frequencies that angles are computed from (RoPE's inv_freq): rounded, every angle position *
# inv_freq drifts, more at long positions (rope-bf16: 0.52 in cos). A cos/sin table rounded to
# half is within half's own rounding (0.002 there) and other float buffers (running statistics)
# are left alone.
COMPUTED_BUFFER = re.compile(r"inv_freq|freqs?$")


@dataclasses.dataclass(frozen=True)
class Hazard:
    """A pattern in a model that one of the gallery's cases shows failing."""

    kind: str  # one of HAZARDS
    where: str  # the module or tensor path
    detail: str

    @property
    def case(self) -> str:
        return HAZARDS[self.kind].case

    def describe(self) -> str:
        return f"{self.kind} at {self.where}: {self.detail} (see cases/{self.case})"


def hazards(model: nn.Module, attention_mask: torch.Tensor | None = None) -> list[Hazard]:
    """The hazard patterns of the gallery's cases found in ``model`` (and a mask it is fed).

    Intended mixed precision is not a hazard: float32 tensors ``_keep_in_fp32_modules`` lists,
    and float32 trainable parameters while the rest is frozen (master weights for a GradScaler).
    """
    found: list[Hazard] = []
    rows = audit(model)
    majority = _majority(rows)
    kept_by = _keep_in_fp32_entries(model)
    parameters = dict(model.named_parameters())
    fine_tuning = any(p.requires_grad for p in parameters.values()) and not all(
        p.requires_grad for p in parameters.values()
    )
    for row in rows:
        for name in row.names:
            path = f"{row.module}.{name}" if row.module else name
            master = fine_tuning and row.kind == "param" and parameters[path].requires_grad
            if (
                row.kind == "param"
                and row.odd
                and row.dtype == "float32"
                and not master
                and (majority[1] in ("float16", "bfloat16"))
            ):
                found.append(Hazard("float32-in-half", path, f"float32 in a {majority[1]} model"))
            if (
                row.kind == "buffer"
                and row.dtype in ("float16", "bfloat16")
                and (COMPUTED_BUFFER.search(name))
            ):
                found.append(Hazard("rounded-buffer", path, f"{name} in {row.dtype}"))
    for path, module in model.named_modules():
        parts = set(path.split("."))
        for entry, attribute in kept_by.items():
            if entry in parts and any(
                p.dtype == torch.float16 for p in module.parameters(recurse=False)
            ):
                found.append(
                    Hazard("keep-in-fp32-cast-away", path, f"float16, listed in {attribute}")
                )
        found += _left_behind(path, module, majority)
    found += _lossy_merge(model)
    half_on_cpu = [n for n, p in parameters.items() if p.dtype == torch.float16 and p.is_cpu]
    if half_on_cpu:
        found.append(Hazard("half-on-cpu", half_on_cpu[0],
                            f"{len(half_on_cpu)} float16 parameters on the CPU"))  # fmt: skip
    trainable = [n for n, p in parameters.items() if p.requires_grad and p.dtype == torch.float16]
    if fine_tuning and trainable:
        found.append(Hazard("half-trainable", trainable[0],
                            f"{len(trainable)} trainable float16 parameters"))  # fmt: skip
    if attention_mask is not None and _added_as_scores(attention_mask):
        found.append(Hazard("float-attention-mask", "attention_mask",
                            f"{_dtype_name(attention_mask.dtype)} mask of 0 and 1"))  # fmt: skip
    return found


def _left_behind(path: str, module: nn.Module, majority: tuple[str, str]) -> list[Hazard]:
    """Modules ``module`` holds in a plain list, tuple or dict (``.to()`` does not reach them)
    whose tensors differ from the model's majority (device, dtype): the forward meets them
    as they were. One moved by hand to match (as OmniLMM's fix does) is not flagged."""
    found = []
    for name, value in vars(module).items():
        held = value.values() if isinstance(value, dict) else value
        if not isinstance(value, (list, tuple, dict)) or name.startswith("_"):
            continue
        for item in [item for item in held if isinstance(item, nn.Module)]:
            rows = audit(item)
            odd = {(row.device, row.dtype) for row in rows if _is_floating(row.dtype)}
            odd.discard(majority)
            if odd:
                device, dtype = sorted(odd)[0]
                where = f"{path}.{name}".lstrip(".")
                found.append(Hazard("unreachable-submodule", where,
                                    f"{type(value).__name__} of modules, not a ModuleList: "
                                    f"{dtype} on {device} in a {majority[1]} model on "
                                    f"{majority[0]}"))  # fmt: skip
                break
    return found


QUANTIZED_PARAMETERS = {"Params4bit": "4-bit", "Int8Params": "8-bit"}  # bitsandbytes' classes


def _lossy_merge(model: nn.Module) -> list[Hazard]:
    """A peft model whose adapters are gone (``merge_and_unload()``) from layers that hold 4-bit
    or half weights: the merge rounded W + BA to them (qlora-merge-4bit: the 4-bit delta is
    lost, bfloat16 keeps 72% of it). Adapters still attached are not flagged (QLoRA training)."""
    if not getattr(model, "peft_config", None) or not hasattr(model, "base_model"):
        return []
    if any(hasattr(module, "lora_A") for module in model.modules()):
        return []  # adapters attached: nothing merged yet
    lossy = {}
    for name, module in _targeted_modules(model):
        weight = getattr(module, "weight", None)
        if not isinstance(weight, torch.Tensor):
            continue
        if type(weight).__name__ in QUANTIZED_PARAMETERS:
            lossy[name] = QUANTIZED_PARAMETERS[type(weight).__name__]
        elif weight.dtype in (torch.float16, torch.bfloat16):
            lossy[name] = _dtype_name(weight.dtype)
    if not lossy:
        return []
    first, kinds = next(iter(lossy)), sorted(set(lossy.values()))
    detail = f"adapters merged into {len(lossy)} layers of {' and '.join(kinds)} weights"
    return [Hazard("lossy-merge", first, detail)]


def _targeted_modules(peft_model: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    """The modules of a peft model's base that its configs target: peft's own list (from 0.8),
    else each config's ``target_modules`` (a regex over the whole name, or name suffixes)."""
    base = peft_model.base_model.model
    listed = getattr(peft_model.base_model, "targeted_module_names", None)
    if listed:
        yield from ((name, base.get_submodule(name)) for name in listed)
        return
    targets = [
        getattr(config, "target_modules", None) for config in peft_model.peft_config.values()
    ]
    for name, module in base.named_modules():
        for target in filter(None, targets):
            if isinstance(target, str):
                hit = re.fullmatch(target, name) is not None
            else:
                hit = any(name == t or name.endswith(f".{t}") for t in target)
            if hit:
                yield name, module
                break


def _added_as_scores(mask: torch.Tensor) -> bool:
    """A float mask of 0 and 1: attention adds a float mask to its scores, so "keep" (1) and
    "drop" (0) become two offsets a step apart; a bool mask, or -inf for "drop", is applied."""
    if not mask.is_floating_point() or mask.numel() == 0:
        return False
    zeros, ones = mask == 0, mask == 1
    return bool((zeros | ones).all() and zeros.any() and ones.any())


def pipeline_hazards(components: dict) -> list[Hazard]:
    """The components of one pipeline (``pipe.components``) that hold another float dtype than
    its denoiser (``unet`` / ``transformer``, else the largest): a pipeline called in one dtype
    feeds each component tensors of that dtype."""
    dtypes = {}
    for name, component in components.items():
        if isinstance(component, nn.Module):
            _, dtype = _majority(audit(component))
            if dtype != "-" and _is_floating(dtype):
                dtypes[name] = (dtype, sum(p.numel() for p in component.parameters()))
    if len({dtype for dtype, _ in dtypes.values()}) < 2:
        return []
    denoiser = next((name for name in ("unet", "transformer") if name in dtypes),
                    max(dtypes, key=lambda name: dtypes[name][1]))  # fmt: skip
    expected = dtypes[denoiser][0]
    return [
        Hazard("component-dtype-mix", name, f"{dtype} while the {denoiser} is {expected}")
        for name, (dtype, _) in dtypes.items()
        if dtype != expected
    ]


# Optimizer options that carry what rounding to a half weight drops (optimi's Kahan summation,
# on by default for half parameters; torchao's stochastic rounding).
COMPENSATED = {"kahan_sum": (None, True), "bf16_stochastic_round": (True,)}


def optimizer_hazards(optimizer: torch.optim.Optimizer) -> list[Hazard]:
    """Half-precision parameters an optimizer updates in place with nothing to carry the
    rounding (no float32 master copy, no compensated summation): small updates round away."""
    for option, compensating in COMPENSATED.items():
        if option in optimizer.defaults and optimizer.defaults[option] in compensating:
            return []
    half = [
        p for group in optimizer.param_groups for p in group["params"]
        if p.dtype in (torch.float16, torch.bfloat16)
    ]  # fmt: skip
    if not half:
        return []
    detail = f"steps {len(half)} {_dtype_name(half[0].dtype)} parameters in place"
    return [Hazard("half-optimizer", type(optimizer).__name__, detail)]


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
    generator on another device type. ``.found`` lists the first of each kind."""

    FFTS = {getattr(torch.fft, name): name for name in (
        "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
        "rfftn", "irfftn", "hfft", "ihfft")}  # fmt: skip

    def __init__(self):
        super().__init__()
        self.found: list[Hazard] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True  # the call's own error is raised by func, not by this watch
        kwargs = kwargs or {}
        if (
            func in self.FFTS
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


def generator_hazards(generators: dict, device: torch.device | str) -> list[Hazard]:
    """Generators (by name) that cannot seed a pipeline running on ``device``: diffusers'
    ``randn_tensor`` draws on the generator's device and moves the result, which it allows only
    for a CPU generator."""
    device = torch.device(device)
    return [
        Hazard("generator-device", name,
               f"a {generator.device.type} generator for a pipeline on {device.type}")
        for name, generator in generators.items()
        if generator.device.type not in ("cpu", device.type)
    ]  # fmt: skip


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


def format_hazards(model: nn.Module, attention_mask: torch.Tensor | None = None) -> str:
    """The hazards as lines, each naming the case that shows it failing; or that none was found."""
    found = hazards(model, attention_mask)
    if not found:
        return f"{type(model).__name__}: none of the gallery's hazard patterns found"
    return "\n".join(f"{type(model).__name__}: {hazard.describe()}" for hazard in found)


def main(argv: list[str] | None = None) -> int:
    """``python -m shared.culprit package.module:factory``: audit the model the factory returns."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m shared.culprit", description=main.__doc__)
    parser.add_argument("factory", nargs="?", help="module:callable returning an nn.Module")
    parser.add_argument("--list", action="store_true", help="list the hazard patterns")
    args = parser.parse_args(argv)
    if args.list:
        for kind, hazard in HAZARDS.items():
            finders = "; ".join(str(FINDERS[finder]) for finder in hazard.found_by)
            print(f"{kind}: {hazard.meaning} (see cases/{hazard.case}; found by {finders})")
        return 0
    module_name, _, attribute = (args.factory or "").partition(":")
    if not attribute:
        parser.error("give MODULE:FACTORY, e.g. my_project.models:build_model")
    model = getattr(importlib.import_module(module_name), attribute)()
    if not isinstance(model, nn.Module):
        parser.error(f"{args.factory} returned a {type(model).__name__}, not an nn.Module")
    print(format_audit(model, odd_only=True))
    print(format_hazards(model))
    return 1 if hazards(model) else 0


if __name__ == "__main__":
    raise SystemExit(main())
