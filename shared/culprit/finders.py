"""Static hazard finders: the patterns the gallery's cases document (``shared.hazards``), found in
what a variant holds: a model, a pipeline's components and generators, an optimizer.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator

import torch
from torch import nn

from shared.culprit.audit import audit, keep_in_fp32_entries, majority
from shared.culprit.tensors import added_as_scores, dtype_name, is_floating
from shared.hazards import HAZARDS

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
    most = majority(rows)
    kept_by = keep_in_fp32_entries(model)
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
                and (most[1] in ("float16", "bfloat16"))
            ):
                found.append(Hazard("float32-in-half", path, f"float32 in a {most[1]} model"))
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
        found += _left_behind(path, module, most)
    found += _lossy_merge(model)
    half_on_cpu = [n for n, p in parameters.items() if p.dtype == torch.float16 and p.is_cpu]
    if half_on_cpu:
        found.append(Hazard("half-on-cpu", half_on_cpu[0],
                            f"{len(half_on_cpu)} float16 parameters on the CPU"))  # fmt: skip
    trainable = [n for n, p in parameters.items() if p.requires_grad and p.dtype == torch.float16]
    if fine_tuning and trainable:
        found.append(Hazard("half-trainable", trainable[0],
                            f"{len(trainable)} trainable float16 parameters"))  # fmt: skip
    if attention_mask is not None and added_as_scores(attention_mask):
        found.append(Hazard("float-attention-mask", "attention_mask",
                            f"{dtype_name(attention_mask.dtype)} mask of 0 and 1"))  # fmt: skip
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
            odd = {(row.device, row.dtype) for row in rows if is_floating(row.dtype)}
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


def pipeline_hazards(components: dict) -> list[Hazard]:
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
    detail = f"steps {len(half)} {dtype_name(half[0].dtype)} parameters in place"
    return [Hazard("half-optimizer", type(optimizer).__name__, detail)]


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


def format_hazards(model: nn.Module, attention_mask: torch.Tensor | None = None) -> str:
    """The hazards as lines, each naming the case that shows it failing; or that none was found."""
    found = hazards(model, attention_mask)
    if not found:
        return f"{type(model).__name__}: none of the gallery's hazard patterns found"
    return "\n".join(f"{type(model).__name__}: {hazard.describe()}" for hazard in found)
