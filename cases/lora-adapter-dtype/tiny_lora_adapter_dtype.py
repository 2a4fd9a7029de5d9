"""What the lora-adapter-dtype variants share: a tiny Llama checkpoint saved in float16, and a
LoRA adapter trained on it in float32 with ``modules_to_save=["lm_head"]``, saved beside it.

Real classes, tiny and seeded (``tiny_seed``); nothing is downloaded:
- ``LlamaForCausalLM`` (1 layer, hidden 32), saved in float16 as checkpoints ship;
- a LoRA adapter on q/v with the output head fully trained (``modules_to_save``), as SFT
  recipes do (Chinese-LLaMA-Alpaca-2 trains ``embed_tokens,lm_head`` this way): trained in
  float32, so ``adapter_model.safetensors`` holds a float32 copy of ``lm_head``.

The variants load the half base, load the adapter with ``PeftModel.from_pretrained`` and take
the logits of a prompt; the float32 reference is the same adapter on the float32 base.
"""

from __future__ import annotations

from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

from shared.tiny_models import quiet_hf_logging, save_pretrained_to_temp, tiny_seed

quiet_hf_logging()


def save_tiny_checkpoint() -> Path:
    """A tiny Llama saved in float16; return its folder."""
    tiny_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return save_pretrained_to_temp(LlamaForCausalLM(config).to(torch.float16))


def save_float32_adapter(checkpoint: Path) -> Path:
    """A LoRA adapter trained in float32 on ``checkpoint``, its head in modules_to_save; its folder."""
    model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32)
    config = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], modules_to_save=["lm_head"])
    peft_model = get_peft_model(model, config)
    tiny_seed(1)
    with torch.no_grad():  # stands for training: B leaves zero, the head copy moves
        for name, param in peft_model.named_parameters():
            if "lora_B" in name or "modules_to_save" in name:
                param.add_(0.02 * torch.randn_like(param))
    return save_pretrained_to_temp(peft_model)


def prompt() -> torch.Tensor:
    """A tokenized prompt (token ids, as a tokenizer returns them)."""
    return torch.tensor([[1, 5, 9, 17, 33, 2]])


def float32_reference(checkpoint: Path, adapter: Path) -> torch.Tensor:
    """The adapter's logits on the float32 base: what the half model should approximate."""
    base = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32)
    with torch.no_grad():
        return PeftModel.from_pretrained(base, adapter).eval()(prompt()).logits


def head_logits(model: torch.nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
    """The logits as the output head computes them. Llama's forward upcast its logits to float32
    up to transformers 4.45 (``.float()``), so the returned logits' dtype is the library's
    choice; the head's own output shows the dtype the model really ran in."""
    seen: dict[str, torch.Tensor] = {}
    hook = model.get_output_embeddings().register_forward_hook(
        lambda module, args, output: seen.setdefault("logits", output)
    )
    try:
        model(input_ids)
    finally:
        hook.remove()
    return seen["logits"]
