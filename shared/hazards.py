"""The hazard patterns of the gallery's cases, each with the case that shows it failing and what
finds it (no torch here: the catalog validates ``case.toml``'s ``hazard`` against it).

Some patterns are in a model's tensors; others only show while it runs, in what it is fed or
what it produces, so the harness's watchers record them (``shared.culprit``)."""

import re
from typing import NamedTuple


class Finder(NamedTuple):
    """A subject hazard patterns are found in: what a variant holds at its end (a model, a
    pipeline, an optimizer; ``shared.culprit.finders`` holds one finder per hazard kind and
    subject), or what it does while it runs, which a watcher (a class of ``shared.culprit``,
    record only) sees."""

    text: str  # what it looks at, as the hazard list and the case pages say it
    watcher: str = ""  # the shared.culprit class watching a run; "" for an end-state subject
    always: bool = False  # the harness watches every variant; else only those that need it

    def __str__(self) -> str:
        return self.text


# The one registry of subjects: a hazard kind names those it is found in (found_by). An
# end-state subject's finders are the functions shared.culprit.finders registers for it; a
# watcher is built from here by the harness's executor (for a variant whose audit needs it) and
# by `python -m shared.culprit run` (all of them). A new watcher is one entry here and its class
# in shared.culprit.
FINDERS = {
    "model": Finder("hazards(model): the model's parameters, buffers and submodules"),
    "mask": Finder("hazards(model, attention_mask): the attention mask it is fed"),
    "pipeline": Finder("pipeline_hazards(components): the components of one pipeline"),
    "generators": Finder(
        "generator_hazards(generators, device): the generators seeding a pipeline on a device"
    ),
    "optimizer": Finder("optimizer_hazards(optimizer): the parameters an optimizer steps"),
    "calls": Finder(
        "MismatchGuard: the tensors each module call is given, while it runs",
        watcher="MismatchGuard",
        always=True,
    ),
    "values": Finder(
        "NonFiniteGuard: the outputs each module call returns, while it runs",
        watcher="NonFiniteGuard",
    ),
    "ops": Finder(
        "OpWatch: the arguments of torch's attention, FFT, random and fill calls and of "
        "Tensor.numpy, while it runs",
        watcher="OpWatch",
    ),
    "fsdp": Finder(
        "FlatParamWatch: the parameters FSDP1 puts in each FlatParameter, while it wraps",
        watcher="FlatParamWatch",
    ),
    "scaler": Finder(
        "UnscaleWatch: GradScaler.unscale_ and accelerate's clip_grad_norm_ calls, while it runs",
        watcher="UnscaleWatch",
    ),
    "training-args": Finder(
        "TrainingArgsWatch: the precision transformers' TrainingArguments are built with",
        watcher="TrainingArgsWatch",
    ),
}
# Watchers the runner turns on per variant (the rest look at the end state, or always watch).
ON_DEMAND = tuple(name for name, finder in FINDERS.items() if finder.watcher and not finder.always)
# The watcher whose first find is a failing variant's culprit (a verdict may check it), and the
# one a variant that may fail silently is watched by for its first inf/NaN producer.
CULPRIT_WATCHER, SILENT_WATCHER = "calls", "values"


class HazardKind(NamedTuple):
    """One hazard pattern: the case that documents it, what it means, the subjects it is found
    in (FINDERS), and the fix for the pattern (the case's own fix is in its case.toml/README)."""

    case: str  # the gallery case that shows this pattern failing
    meaning: str
    found_by: tuple[str, ...]  # FINDERS that find it
    fix: str


# A new hazard kind: one entry here, and its finder (shared.culprit.finders, @finder(kind,
# subject)) or the watcher that records it.


HAZARDS = {
    "float32-in-half": HazardKind(
        "minicpm", "a float32 tensor meets half ones outside autocast", ("model",),
        "cast the whole model after loading (model.to(dtype)), or compute under autocast",
    ),
    "keep-in-fp32-cast-away": HazardKind(
        "t5-half", "a module transformers keeps float32 was cast to float16", ("model",),
        "load in the dtype (from_pretrained(..., torch_dtype=...)) instead of .half() after: "
        "the loader keeps _keep_in_fp32_modules float32",
    ),
    "rounded-buffer": HazardKind(
        "rope-bf16", "a computed float buffer (RoPE's inv_freq) rounded to half", ("model",),
        "load in the dtype (from_pretrained(..., torch_dtype=...)) instead of .to(dtype) after, "
        "or recompute the buffer in float32",
    ),
    "unreachable-submodule": HazardKind(
        "omnilmm", "a module held in a plain list or dict, left behind by .to()", ("model",),
        "register it (an attribute, nn.ModuleList or nn.ModuleDict) so .to() reaches it",
    ),
    "half-trainable": HazardKind(
        "lora-fp16-gradscaler", "float16 trainable parameters: GradScaler refuses them",
        ("model",), "make the trainable parameters float32; keep the frozen base in float16",
    ),
    "half-on-cpu": HazardKind(
        "cpu-fp16-kernels",
        "float16 weights on the CPU: torch < 2.3 lacks many of its kernels",
        ("model",), "on the CPU compute in float32 (or bfloat16, whose CPU kernels exist)",
    ),
    "lossy-merge": HazardKind(
        "qlora-merge-4bit",
        "LoRA adapters merged into 4-bit or half weights: W + BA is rounded to them",
        ("model",), "merge into base weights in a precision that holds the delta (float32)",
    ),
    "component-dtype-mix": HazardKind(
        "pipeline-component-dtype",
        "a pipeline's components hold different float dtypes",
        ("pipeline",), "load every component in the pipeline's dtype (torch_dtype=...)",
    ),
    "half-optimizer": HazardKind(
        "bf16-pure-training",
        "an optimizer steps half weights directly: updates below their resolution round away",
        ("optimizer",),
        "keep float32 master weights under autocast, or an optimizer that compensates (Kahan "
        "summation, stochastic rounding)",
    ),
    "mismatched-input": HazardKind(
        "xcomposer",
        "a module was fed a tensor of another dtype or device than its weights",
        ("calls",), "cast or move the input to the module's dtype and device, or use autocast",
    ),
    "non-finite-output": HazardKind(
        "sdxl-vae-fp16", "a module turned finite inputs into inf/NaN (float16's range)",
        ("values",), "run that module in float32 (or bfloat16, whose range is float32's)",
    ),
    "float-attention-mask": HazardKind(
        "chroma-float-mask",
        "a float 0/1 mask is added to the attention scores, not applied",
        ("ops", "mask"), "pass the mask as bool (mask.bool()), or as 0/-inf offsets",
    ),
    "half-fft": HazardKind(
        "freeu-fft",
        "an FFT asked for in half precision (bfloat16 anywhere, float16 on the CPU)",
        ("ops",), "upcast to float32 around the FFT, and cast the result back",
    ),
    "fill-out-of-range": HazardKind(
        "half-mask-fill-overflow",
        "a number beyond a half tensor's range filled into it (float32's minimum as a mask "
        "value for float16 scores)",
        ("ops",), "fill with the tensor's own torch.finfo(dtype).min, or float('-inf')",
    ),
    "generator-device": HazardKind(
        "generator-device",
        "a torch.Generator on another device type than what it draws for (torch.randn's "
        "device; a pipeline's, where only a CPU generator may differ)",
        ("ops", "generators"),
        "make the generator on the device it draws for, or a CPU generator for every device",
    ),
    "bfloat16-to-numpy": HazardKind(
        "bf16-to-numpy",
        "a bfloat16 tensor handed to NumPy (Tensor.numpy): NumPy has no bfloat16",
        ("ops",), "cast to float32 before .numpy() (tensor.float().numpy())",
    ),
    "mixed-flat-param": HazardKind(
        "fsdp-lora-flat-dtype",
        "FSDP1 given one unit of parameters in two dtypes to flatten into one FlatParameter",
        ("fsdp",),
        "one dtype per FSDP1 unit: wrap the odd-dtype modules as their own units, cast them, "
        "or use FSDP2",
    ),
    "unscale-twice": HazardKind(
        "gradscaler-unscale-twice",
        "GradScaler.unscale_ called again on an optimizer before update(), or accelerate's "
        "clip_grad_norm_ on an accumulation micro-step that does not sync",
        ("scaler",),
        "unscale and clip once per optimizer step (if accelerator.sync_gradients: ...)",
    ),
    "bf16-without-device": HazardKind(
        "bf16-unsupported-setup",
        "TrainingArguments asked for bf16 where no device runs it and use_cpu is not set",
        ("training-args",),
        "ask bf16 only where it runs: use_cpu=True on the CPU, else fp16 or float32",
    ),
}

# Hazards whose failure raises nothing (lost updates, a float mask, inf/NaN): a run that holds
# one is reported even when it ends cleanly. The others end in an error where they fail (a
# mismatch, a refused kernel), so a clean run holding one is no problem (autocast, say). A RoPE
# buffer rounded to half costs precision only at long positions: a run cannot tell whether it
# decided anything, so it is a note (fixed variants cast whole models and stay within tolerance).
SILENT_HAZARDS = frozenset({
    "keep-in-fp32-cast-away", "lossy-merge", "half-optimizer", "non-finite-output",
    "float-attention-mask",
    "unscale-twice",  # on the CPU accelerate has no GradScaler: it clips partial gradients
})  # fmt: skip
NOTED_HAZARDS = frozenset({"rounded-buffer"})
# ... unless the run fed sequences this long: RoPE's angle is position * inv_freq, so a rounded
# inv_freq (bfloat16 keeps 8 significant bits: relative error up to 2**-8) puts the angle a whole
# radian off from about 256 positions on (rope-bf16: 3000 tokens, cos off by 0.52).
SEQUENCE_DECIDES = {"rounded-buffer": 256}
# A hazard that many working models hold on a recent torch (float16 on the CPU): it names a
# failing run's cause only through the call that raised (a kernel missing for Half).
UNDECIDED = frozenset({"half-on-cpu"})


class Mechanism(NamedTuple):
    text: str  # how it happened, as the diagnosis says it
    case: str | None  # the case that documents it, where one does
    family: str


# How a mismatch or a non-finite value came about, as `python -m shared.culprit run` tells it
# from where the tensor came from (the script, a model's output, model code) and what the module
# is (an adapter, a submodule in another dtype than its model, one no model registers).
MECHANISMS = {
    "float64-data": Mechanism(
        "float64 data (NumPy's default) reached float32/half weights: never cast at the boundary",
        "float64-input", "dtype-mix",
    ),
    "meta-tensor": Mechanism(
        "weights still on the meta device: made empty and never loaded", "meta-tensor-copy",
        "meta-tensors",
    ),
    "not-registered": Mechanism(
        "a module kept in a plain list or dict is not registered: .to()/.half() never reach it",
        "omnilmm", "device-placement",
    ),
    "adapter-dtype": Mechanism(
        "an adapter (LoRA, modules_to_save) kept in another dtype than the base it feeds",
        "lora-adapter-dtype", "dtype-mix",
    ),
    "submodule-dtype": Mechanism(
        "a submodule in another dtype than the rest of its model (cast by part, or kept float32)",
        "minicpm", "dtype-mix",
    ),
    "submodule-not-moved": Mechanism(
        "a submodule left on another device than the rest of its model", None,
        "device-placement",
    ),
    "made-in-model": Mechanism(
        "a tensor made in model code in the default dtype (float32), not the model's",
        "onetrainer", "dtype-mix",
    ),
    "made-in-model-device": Mechanism(
        "a tensor made in model code on the default device, not the model's", None,
        "device-placement",
    ),
    "component-dtype": Mechanism(
        "one model's output fed to another model (a pipeline component) in another dtype",
        "pipeline-component-dtype", "dtype-mix",
    ),
    "input-not-cast": Mechanism(
        "the input was never cast to the model's dtype", "xcomposer", "dtype-mix",
    ),
    "input-not-moved": Mechanism(
        "the input was never moved to the model's device", "inputs-device", "device-placement",
    ),
    "op-operands": Mechanism(
        "tensors of two dtypes met in a torch call that no module checks (model or user code)",
        None, "dtype-mix",
    ),
    "op-operands-device": Mechanism(
        "tensors on two devices met in a torch call that no module checks (model or user code)",
        None, "device-placement",
    ),
    "offload-moved": Mechanism(
        "a model dispatched with offload (device_map) was moved or cast afterwards: accelerate's "
        "hooks own its placement", "offload-move", "offload",
    ),
    "quantized-moved": Mechanism(
        "a quantized model (bitsandbytes) was cast or moved: its weights' dtype is the "
        "quantization's", "bnb-quantized-to", "quantization",
    ),
    "half-kernel-missing": Mechanism(
        "float16 on the CPU: this torch has no CPU kernel of the op for Half", "cpu-fp16-kernels",
        "unsupported-dtype",
    ),
    "overflow": Mechanism(
        "overflow: a value past the dtype's range (float16's 65504) became inf, then NaN",
        None, "overflow",
    ),
    "overflow-backward": Mechanism(
        "overflow in the backward pass: a gradient past the dtype's range", None,
        "gradient-scaling",
    ),
}  # fmt: skip

# Error messages that name no failure: a CUDA kernel's assert is reported at the next
# synchronisation as this line alone (the assertion printed above it says what failed). A case
# documenting one on some device is never named by it (by `explain`, or diagnose's fallback).
NAMES_NOTHING = re.compile(r"cuda error: device-side assert triggered", re.IGNORECASE)

# Where one case documents a finding more closely than its mechanism's (or hazard's) own case:
# (finding, regex over the module path or op, case). A mismatch is first matched against every
# variant's documented `culprit` (case.toml) that names a path.
DOCUMENTED_AT = [
    ("failed-op", r"^index_put_?$", "index-put-embed-merge"),
    # The overflows the cases document, by the library class where they happen.
    ("non-finite", r"^Gemma3", "gemma3-fp16-overflow"),
    ("non-finite", r"^T5", "t5-half"),
    ("non-finite", r"^UNet2DConditionModel\..*\.attn\d$", "sd21-upcast-attention"),
    ("non-finite", r"^AutoencoderKL\.decoder\.", "sdxl-vae-fp16"),
    # FSDP2 (fully_shard makes the class FSDP<Model>) refuses a unit of two dtypes.
    ("float32-in-half", r"^FSDP", "fsdp-lora-flat-dtype"),
    # A RoPE buffer that FSDP's MixedPrecision(buffer_dtype=...) casts every forward.
    ("rounded-buffer", r"_fsdp_wrapped_module\.", "fsdp-buffer-dtype-rope"),
]


def documented_cases(finding: str, where: str, culprits) -> list[str]:
    """The cases that document ``finding`` at ``where``: each declared culprit matching it
    (``(regex, case)`` pairs; one naming a bare class matches only a module no model holds,
    named by its class alone), then DOCUMENTED_AT."""
    found = [
        case for pattern, case in culprits
        if (r"\." in pattern or "." not in where) and re.search(pattern, where)
    ]  # fmt: skip
    found += [case for kind, pattern, case in DOCUMENTED_AT
              if kind == finding and re.search(pattern, where)]  # fmt: skip
    return list(dict.fromkeys(found))


def documented_case(finding: str, where: str, culprits) -> str | None:
    """The first of :func:`documented_cases`, or None."""
    return next(iter(documented_cases(finding, where, culprits)), None)
