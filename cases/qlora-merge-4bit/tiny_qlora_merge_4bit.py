"""What the qlora-merge-4bit variants share: a tiny Llama checkpoint, a trained-size LoRA adapter
saved beside it, the 4-bit load, and the merged weights compared with what the adapter adds.

Real classes, tiny and seeded (``tiny_seed``); nothing is downloaded:
- ``LlamaForCausalLM`` (2 layers, hidden 64), saved in bfloat16 as Llama checkpoints ship;
- a LoRA adapter (r=8, on every projection, as QLoRA trains them) saved with
  ``save_pretrained`` and loaded back with ``PeftModel.from_pretrained``, as in
  huggingface/peft#2321. A trained adapter's delta ``scaling * B @ A`` is small next to the
  weight it adds to: its size relative to the base weight is the tiny model's one arbitrary
  scale, the knob ``ADAPTER_DELTA``.

The figure the variants judge: after ``merge_and_unload()``, each adapted layer's weight should
be the base weight plus the adapter's delta. ``merge_outcome`` returns both, flattened over every
adapted layer, with the unit to read them in: the adapter's largest delta entry. A merge that
keeps the delta is off by ~1e-5 of that unit (float32 rounding); a merge that loses it is off
by about the delta itself (1 unit).
"""

from __future__ import annotations

from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaForCausalLM

from shared.tiny_models import (
    knob,
    quiet_hf_logging,
    save_pretrained_to_temp,
    tiny_llama_config,
    tiny_seed,
)

quiet_hf_logging()

# Every linear projection of a Llama block, spelled out: `target_modules="all-linear"` only
# exists from peft 0.8.
PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def save_tiny_checkpoint() -> Path:
    """A tiny Llama saved in bfloat16 (as Llama checkpoints ship); return its folder."""
    tiny_seed(0)
    config = tiny_llama_config()
    return save_pretrained_to_temp(LlamaForCausalLM(config).to(torch.bfloat16))


def save_trained_adapter(checkpoint: Path) -> Path:
    """A LoRA adapter for ``checkpoint`` whose delta has a trained adapter's size; its folder.

    LoRA starts with B = 0 (no change); training grows it. Here B is drawn at random and scaled
    so that each layer's delta has ``ADAPTER_DELTA`` times the root-mean-square of the weight.
    """
    # rms(scaling * B @ A) / rms(W) of a trained adapter: 0.2 % (a short, low-learning-rate
    # run) to 10 % (a long one at a high rate); 0.6 % is the dossier's trained-size delta.
    ratio = knob("ADAPTER_DELTA", 0.006, (0.002, 0.1))
    model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32)
    tiny_seed(1)
    config = LoraConfig(r=8, lora_alpha=16, target_modules=PROJECTIONS, task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, config)
    with torch.no_grad():
        for layer in adapted_layers(peft_model).values():
            lora_b = layer.lora_B["default"].weight
            lora_b.normal_()
            size = delta_of(layer).pow(2).mean().sqrt()
            lora_b.mul_(ratio * weight_of(layer).float().pow(2).mean().sqrt() / size)
    return save_pretrained_to_temp(peft_model)


def load_4bit(checkpoint: Path, device: torch.device) -> LlamaForCausalLM:
    """The checkpoint quantized to 4-bit NF4 at load, as QLoRA trains on it: peft#2321's config
    (double quantization, bfloat16 compute and storage).

    The storage dtype only types the packed bytes (for FSDP), not the values; bitsandbytes
    0.46 refuses any but uint8 on the CPU ("Blockwise 4bit dequantization on CPU only supports
    uint8 storage"), so the CPU keeps uint8.
    """
    from transformers import BitsAndBytesConfig

    quantization = BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_compute_dtype=torch.bfloat16,
        bnb_4bit_use_double_quant=True,
        bnb_4bit_quant_storage=torch.bfloat16 if device.type == "cuda" else torch.uint8,
    )
    return LlamaForCausalLM.from_pretrained(
        checkpoint,
        quantization_config=quantization,
        torch_dtype=torch.float32,  # what is not quantized, and what dequantize() gives back
        device_map={"": str(device)},
    )


def adapted_layers(peft_model) -> dict[str, torch.nn.Module]:
    """The LoRA layers of a PeftModel, by the name their base layer has in the bare model."""
    from peft.tuners.lora import LoraLayer

    prefix = "base_model.model."
    return {
        name.removeprefix(prefix): module
        for name, module in peft_model.named_modules()
        if isinstance(module, LoraLayer)
    }


def delta_of(layer) -> torch.Tensor:
    """What the adapter adds to the layer's weight, ``scaling * B @ A``, in float32."""
    lora_a = layer.lora_A["default"].weight.detach().float()
    lora_b = layer.lora_B["default"].weight.detach().float()
    return layer.scaling["default"] * (lora_b @ lora_a)


def weight_of(linear: torch.nn.Module) -> torch.Tensor:
    """A linear layer's weight as its forward uses it: a 4-bit one dequantized (to float32).

    A LoRA layer's own (peft >= 0.7 wraps the base layer; 0.5-0.6 subclassed it).
    """
    weight = getattr(linear, "base_layer", linear).weight
    if type(weight).__name__ == "Params4bit":
        import bitsandbytes as bnb

        return bnb.functional.dequantize_4bit(weight.data, weight.quant_state)
    return weight.detach()


def before_merge(peft_model) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Per adapted layer: (its base weight in float32, the adapter's delta in float32)."""
    return {
        name: (weight_of(layer).float().clone(), delta_of(layer))
        for name, layer in adapted_layers(peft_model).items()
    }


def merge_outcome(before: dict, merged) -> tuple[torch.Tensor, torch.Tensor, float]:
    """(the merged weights, base weights + the adapter's delta, the unit to read them in).

    The merged weights keep the dtype the merge left them in (dequantized if 4-bit); the
    expected ones are float32. Both are flattened over every adapted layer. The unit is the
    adapter's largest delta entry. Also prints what the merge did to the delta.
    """
    merged_flat = torch.cat([weight_of(merged.get_submodule(name)).flatten() for name in before])
    stored = {type(merged.get_submodule(name).weight).__name__ for name in before}
    base = torch.cat([base.flatten() for base, _ in before.values()])
    delta = torch.cat([delta.flatten() for _, delta in before.values()])
    applied = merged_flat.float() - base
    lost = ((applied == 0) & (delta != 0)).float().mean().item()
    relative = ((applied - delta).norm() / delta.norm()).item()
    print(
        f"merged weights: {merged_flat.dtype} ({', '.join(sorted(stored))}); of the adapter's "
        f"delta: {lost:.0%} of the entries lost outright, relative error {relative:.3f}"
    )
    return merged_flat, base + delta, delta.abs().max().item()
