"""A LoRA adapter merged into its bfloat16 base cast to float32 first: W + BA kept exactly."""

import torch
from peft import PeftModel
from tiny_qlora_merge_4bit import (
    before_merge,
    merge_outcome,
    save_tiny_checkpoint,
    save_trained_adapter,
)
from transformers import LlamaForCausalLM

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # the base model, bfloat16
adapter = save_trained_adapter(checkpoint)  # a LoRA adapter trained on it

base = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.bfloat16).to(device)
base.to(torch.float32)  # the fix: merge in float32 (every bfloat16 value is exact in float32)
model = PeftModel.from_pretrained(base, adapter)
before = before_merge(model)  # each base weight and each delta, in float32
merged = model.merge_and_unload()  # W + BA in float32

merged_weights, expected, unit = merge_outcome(before, merged)
# in units of the adapter's largest delta entry: float32 rounding is ~1e-5 of it
compare_to_reference(
    "merged weights", merged_weights / unit, expected / unit, dtype=torch.float32, atol=1e-3, rtol=0
)
