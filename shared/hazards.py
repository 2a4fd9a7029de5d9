"""The hazard patterns ``shared.culprit.hazards`` finds in a model, each with the case that
shows it failing (no torch here: the catalog validates ``case.toml``'s ``hazard`` against it)."""

from typing import NamedTuple


class HazardKind(NamedTuple):
    case: str  # the gallery case that shows this pattern failing
    meaning: str


HAZARDS = {
    "float32-in-half": HazardKind("minicpm", "a float32 tensor meets half ones outside autocast"),
    "keep-in-fp32-cast-away": HazardKind(
        "t5-half", "a module transformers keeps float32 was cast to float16"
    ),
    "rounded-buffer": HazardKind(
        "rope-bf16", "a computed float buffer (RoPE's inv_freq) rounded to half"
    ),
    "unreachable-submodule": HazardKind(
        "omnilmm", "a module held in a plain list or dict: .to() skips it"
    ),
    "half-trainable": HazardKind(
        "lora-fp16-gradscaler", "float16 trainable parameters: GradScaler refuses them"
    ),
    "float-attention-mask": HazardKind(
        "chroma-float-mask", "a float mask is added to the attention scores, not applied"
    ),
}
