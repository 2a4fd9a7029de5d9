"""The hazard patterns of the gallery's cases, each with the case that shows it failing and what
finds it (no torch here: the catalog validates ``case.toml``'s ``hazard`` against it).

Some patterns are in a model's tensors; others only show while it runs, in what it is fed or
what it produces, so the harness's watchers record them (``shared.culprit``)."""

from typing import NamedTuple


class Finder(NamedTuple):
    """What finds hazard patterns: a function over what a variant holds at its end, or a watcher
    (a class of ``shared.culprit``, record only) that the harness runs the variant under."""

    text: str  # what it looks at, as the hazard list and the case pages say it
    watcher: str = ""  # the shared.culprit class watching a run; "" for an end-state finder
    always: bool = False  # the watcher watches every variant; else only those that need it

    def __str__(self) -> str:
        return self.text


# The one registry of finders: a hazard kind names its finders (found_by); the harness's runner
# turns a watcher on for a variant whose audit needs it, the executor builds it from here.
# A new watcher is one entry here and its class in shared.culprit.
FINDERS = {
    "model": Finder("hazards(model): the model's parameters, buffers and submodules"),
    "pipeline": Finder(
        "pipeline_hazards(components) / generator_hazards(generators, device): the components "
        "of one pipeline, the generators seeding it"
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
        "OpWatch: the arguments of torch's attention, FFT, random and fill calls, while it runs",
        watcher="OpWatch",
    ),
    "fsdp": Finder(
        "FlatParamWatch: the parameters FSDP1 puts in each FlatParameter, while it wraps",
        watcher="FlatParamWatch",
    ),
}
# Watchers the runner turns on per variant (the rest look at the end state, or always watch).
ON_DEMAND = tuple(name for name, finder in FINDERS.items() if finder.watcher and not finder.always)
# The watcher whose first find is a failing variant's culprit (a verdict may check it), and the
# one a variant that may fail silently is watched by for its first inf/NaN producer.
CULPRIT_WATCHER, SILENT_WATCHER = "calls", "values"


class HazardKind(NamedTuple):
    case: str  # the gallery case that shows this pattern failing
    meaning: str
    found_by: tuple[str, ...]  # FINDERS that find it


HAZARDS = {
    "float32-in-half": HazardKind(
        "minicpm", "a float32 tensor meets half ones outside autocast", ("model",)
    ),
    "keep-in-fp32-cast-away": HazardKind(
        "t5-half", "a module transformers keeps float32 was cast to float16", ("model",)
    ),
    "rounded-buffer": HazardKind(
        "rope-bf16", "a computed float buffer (RoPE's inv_freq) rounded to half", ("model",)
    ),
    "unreachable-submodule": HazardKind(
        "omnilmm", "a module held in a plain list or dict, left behind by .to()", ("model",)
    ),
    "half-trainable": HazardKind(
        "lora-fp16-gradscaler", "float16 trainable parameters: GradScaler refuses them", ("model",)
    ),
    "half-on-cpu": HazardKind(
        "cpu-fp16-kernels",
        "float16 weights on the CPU: torch < 2.3 lacks many of its kernels",
        ("model",),
    ),
    "lossy-merge": HazardKind(
        "qlora-merge-4bit",
        "LoRA adapters merged into 4-bit or half weights: W + BA is rounded to them",
        ("model",),
    ),
    "component-dtype-mix": HazardKind(
        "pipeline-component-dtype",
        "a pipeline's components hold different float dtypes",
        ("pipeline",),
    ),
    "half-optimizer": HazardKind(
        "bf16-pure-training",
        "an optimizer steps half weights directly: updates below their resolution round away",
        ("optimizer",),
    ),
    "mismatched-input": HazardKind(
        "xcomposer",
        "a module was fed a tensor of another dtype or device than its weights",
        ("calls",),
    ),
    "non-finite-output": HazardKind(
        "sdxl-vae-fp16", "a module turned finite inputs into inf/NaN (float16's range)", ("values",)
    ),
    "float-attention-mask": HazardKind(
        "chroma-float-mask",
        "a float 0/1 mask is added to the attention scores, not applied",
        ("ops",),
    ),
    "half-fft": HazardKind(
        "freeu-fft",
        "an FFT asked for in half precision (bfloat16 anywhere, float16 on the CPU)",
        ("ops",),
    ),
    "fill-out-of-range": HazardKind(
        "half-mask-fill-overflow",
        "a number beyond a half tensor's range filled into it (float32's minimum as a mask "
        "value for float16 scores)",
        ("ops",),
    ),
    "generator-device": HazardKind(
        "generator-device",
        "a torch.Generator on another device type than what it draws for (torch.randn's "
        "device; a pipeline's, where only a CPU generator may differ)",
        ("ops", "pipeline"),
    ),
    "mixed-flat-param": HazardKind(
        "fsdp-lora-flat-dtype",
        "FSDP1 given one unit of parameters in two dtypes to flatten into one FlatParameter",
        ("fsdp",),
    ),
}
