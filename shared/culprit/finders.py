"""Static hazard finders: the patterns the gallery's cases document (``shared.hazards``), found in
what a variant holds: a model (and the mask it is fed), a pipeline's components and generators,
an optimizer.

One small finder per hazard kind and subject, registered with :func:`finder`; :func:`find`
runs every finder of a subject. A new hazard found in a held object: its ``HAZARDS`` entry
(naming the subject in ``found_by``) and one decorated function here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator

import torch
from torch import nn

from shared.culprit.audit import AuditRow, audit, keep_in_fp32_entries, majority
from shared.culprit.tensors import added_as_scores, dtype_name, is_floating
from shared.hazards import FINDERS, HAZARDS


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


# subject (a FINDERS name) -> (hazard kind, its finder), in the order the finders are defined
REGISTRY: dict[str, list[tuple[str, Callable[..., Iterable[Hazard]]]]] = {}


def finder(kind: str, subject: str):
    """Register the decorated function as the finder of ``kind`` in ``subject``: it takes the
    subject and yields the hazards of that kind it holds."""
    if kind not in HAZARDS or subject not in HAZARDS[kind].found_by or FINDERS[subject].watcher:
        raise ValueError(f"{kind} in {subject}: not an end-state subject HAZARDS names for it")

    def register(function):
        REGISTRY.setdefault(subject, []).append((kind, function))
        return function

    return register


def find(subject: str, *held) -> list[Hazard]:
    """Every hazard the finders of ``subject`` find in ``held`` (the subject's arguments)."""
    return [hazard for _, function in REGISTRY.get(subject, ()) for hazard in function(*held)]


def hazards(model: nn.Module, attention_mask: torch.Tensor | None = None) -> list[Hazard]:
    """The hazard patterns of the gallery's cases found in ``model`` (and a mask it is fed).

    Intended mixed precision is not a hazard: float32 tensors ``_keep_in_fp32_modules`` lists,
    and float32 trainable parameters while the rest is frozen (master weights for a GradScaler).
    """
    found = find("model", HeldModel.of(model))
    return found + (find("mask", attention_mask) if attention_mask is not None else [])


def pipeline_hazards(components: dict) -> list[Hazard]:
    """The hazards of one pipeline's components (``pipe.components``)."""
    return find("pipeline", components)


def generator_hazards(generators: dict, device: torch.device | str) -> list[Hazard]:
    """The hazards of the generators (by name) seeding a pipeline that runs on ``device``."""
    return find("generators", generators, torch.device(device))


def optimizer_hazards(optimizer: torch.optim.Optimizer) -> list[Hazard]:
    """The hazards of the parameters an optimizer steps."""
    return find("optimizer", optimizer)


# --- a model -----------------------------------------------------------------------------------

# Frequencies that angles are computed from (RoPE's inv_freq): rounded, every angle position *
# inv_freq drifts, more at long positions (rope-bf16: 0.52 in cos). A cos/sin table rounded to
# half is within half's own rounding (0.002 there) and other float buffers (running statistics)
# are left alone.
COMPUTED_BUFFER = re.compile(r"inv_freq|freqs?$")


@dataclasses.dataclass(frozen=True)
class HeldModel:
    """A model as its finders read it: its audit, majority (device, dtype), the entries it keeps
    float32, its parameters, and whether it is being fine-tuned (some parameters trainable)."""

    model: nn.Module
    rows: list[AuditRow]
    majority: tuple[str, str]
    kept_by: dict[str, str]
    parameters: dict[str, nn.Parameter]
    fine_tuning: bool

    @classmethod
    def of(cls, model: nn.Module) -> HeldModel:
        rows, parameters = audit(model), dict(model.named_parameters())
        trainable = [p.requires_grad for p in parameters.values()]
        return cls(model, rows, majority(rows), keep_in_fp32_entries(model), parameters,
                   any(trainable) and not all(trainable))  # fmt: skip

    def tensors(self, kind: str) -> Iterator[tuple[AuditRow, str]]:
        """(row, path) of each tensor of ``kind`` ("param" or "buffer")."""
        for row in self.rows:
            if row.kind == kind:
                for name in row.names:
                    yield row, f"{row.module}.{name}" if row.module else name


@finder("float32-in-half", "model")
def float32_in_half(held: HeldModel) -> Iterator[Hazard]:
    """float32 parameters odd in a half model (not float32 master weights being trained)."""
    if held.majority[1] not in ("float16", "bfloat16"):
        return
    for row, path in held.tensors("param"):
        master = held.fine_tuning and held.parameters[path].requires_grad
        if row.odd and row.dtype == "float32" and not master:
            yield Hazard("float32-in-half", path, f"float32 in a {held.majority[1]} model")


@finder("rounded-buffer", "model")
def rounded_buffer(held: HeldModel) -> Iterator[Hazard]:
    """A computed frequency buffer (COMPUTED_BUFFER) held in half precision."""
    for row, path in held.tensors("buffer"):
        name = path.rsplit(".", 1)[-1]
        if row.dtype in ("float16", "bfloat16") and COMPUTED_BUFFER.search(name):
            yield Hazard("rounded-buffer", path, f"{name} in {row.dtype}")


@finder("keep-in-fp32-cast-away", "model")
def keep_in_fp32_cast_away(held: HeldModel) -> Iterator[Hazard]:
    """A module the model lists in ``_keep_in_fp32_modules`` holding float16 parameters."""
    for path, module in held.model.named_modules():
        parts = set(path.split("."))
        for entry, attribute in held.kept_by.items():
            if entry in parts and any(
                p.dtype == torch.float16 for p in module.parameters(recurse=False)
            ):
                yield Hazard("keep-in-fp32-cast-away", path, f"float16, listed in {attribute}")


@finder("unreachable-submodule", "model")
def unreachable_submodule(held: HeldModel) -> Iterator[Hazard]:
    """Modules a module holds in a plain list, tuple or dict (``.to()`` does not reach them)
    whose tensors differ from the model's majority (device, dtype): the forward meets them
    as they were. One moved by hand to match (as OmniLMM's fix does) is not flagged."""
    for path, module in held.model.named_modules():
        for name, value in vars(module).items():
            if not isinstance(value, (list, tuple, dict)) or name.startswith("_"):
                continue
            items = value.values() if isinstance(value, dict) else value
            for item in [item for item in items if isinstance(item, nn.Module)]:
                odd = {(row.device, row.dtype) for row in audit(item) if is_floating(row.dtype)}
                odd.discard(held.majority)
                if odd:
                    device, dtype = sorted(odd)[0]
                    where = f"{path}.{name}".lstrip(".")
                    yield Hazard("unreachable-submodule", where,
                                 f"{type(value).__name__} of modules, not a ModuleList: "
                                 f"{dtype} on {device} in a {held.majority[1]} model on "
                                 f"{held.majority[0]}")  # fmt: skip
                    break


QUANTIZED_PARAMETERS = {"Params4bit": "4-bit", "Int8Params": "8-bit"}  # bitsandbytes' classes


@finder("lossy-merge", "model")
def lossy_merge(held: HeldModel) -> list[Hazard]:
    """A peft model whose adapters are gone (``merge_and_unload()``) from layers that hold 4-bit
    or half weights: the merge rounded W + BA to them (qlora-merge-4bit: the 4-bit delta is
    lost, bfloat16 keeps 72% of it). Adapters still attached are not flagged (QLoRA training)."""
    model = held.model
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
            lossy[name] = dtype_name(weight.dtype)
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


@finder("half-on-cpu", "model")
def half_on_cpu(held: HeldModel) -> list[Hazard]:
    """float16 parameters on the CPU."""
    found = [n for n, p in held.parameters.items() if p.dtype == torch.float16 and p.is_cpu]
    if not found:
        return []
    return [Hazard("half-on-cpu", found[0], f"{len(found)} float16 parameters on the CPU")]


@finder("half-trainable", "model")
def half_trainable(held: HeldModel) -> list[Hazard]:
    """float16 trainable parameters in a model being fine-tuned (GradScaler refuses them)."""
    found = [n for n, p in held.parameters.items() if p.requires_grad and p.dtype == torch.float16]
    if not held.fine_tuning or not found:
        return []
    return [Hazard("half-trainable", found[0], f"{len(found)} trainable float16 parameters")]


# --- the mask a model is fed -------------------------------------------------------------------


@finder("float-attention-mask", "mask")
def float_attention_mask(mask: torch.Tensor) -> list[Hazard]:
    """A float mask of 0 and 1 (:func:`added_as_scores`)."""
    if not added_as_scores(mask):
        return []
    return [Hazard("float-attention-mask", "attention_mask",
                   f"{dtype_name(mask.dtype)} mask of 0 and 1")]  # fmt: skip


# --- a pipeline, its generators, an optimizer ----------------------------------------------------


@finder("component-dtype-mix", "pipeline")
def component_dtype_mix(components: dict) -> list[Hazard]:
    """The components of one pipeline (``pipe.components``) that hold another float dtype than
    its denoiser (``unet`` / ``transformer``, else the largest): a pipeline called in one dtype
    feeds each component tensors of that dtype."""
    dtypes = {}
    for name, component in components.items():
        if isinstance(component, nn.Module):
            _, dtype = majority(audit(component))
            if dtype != "-" and is_floating(dtype):
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


@finder("half-optimizer", "optimizer")
def half_optimizer(optimizer: torch.optim.Optimizer) -> list[Hazard]:
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
    detail = f"steps {len(half)} {dtype_name(half[0].dtype)} parameters in place"
    return [Hazard("half-optimizer", type(optimizer).__name__, detail)]


@finder("generator-device", "generators")
def generator_device(generators: dict, device: torch.device) -> list[Hazard]:
    """Generators (by name) that cannot seed a pipeline running on ``device``: diffusers'
    ``randn_tensor`` draws on the generator's device and moves the result, which it allows only
    for a CPU generator."""
    return [
        Hazard("generator-device", name,
               f"a {generator.device.type} generator for a pipeline on {device.type}")
        for name, generator in generators.items()
        if generator.device.type not in ("cpu", device.type)
    ]  # fmt: skip


def format_hazards(model: nn.Module, attention_mask: torch.Tensor | None = None) -> str:
    """The hazards as lines, each naming the case that shows it failing; or that none was found."""
    found = hazards(model, attention_mask)
    if not found:
        return f"{type(model).__name__}: none of the gallery's hazard patterns found"
    return "\n".join(
        f"{type(model).__name__}: {hazard.describe()}\n  fix: {HAZARDS[hazard.kind].fix}"
        for hazard in found
    )
