"""A LoRA adapter merged into a bfloat16 base with `merge_and_unload()`: W + BA rounded to bf16."""

import torch
from peft import PeftModel
from tiny_qlora_merge_4bit import (
    before_merge,
    merge_outcome,
    save_tiny_checkpoint,
    save_trained_adapter,
)
from transformers import LlamaForCausalLM

from shared.checks import measure_error, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # the base model, bfloat16
adapter = save_trained_adapter(checkpoint)  # a LoRA adapter trained on it

base = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.bfloat16).to(device)
model = PeftModel.from_pretrained(base, adapter)
before = before_merge(model)  # each base weight and each delta, in float32
merged = model.merge_and_unload()  # W + BA, rounded to bfloat16: no warning

merged_weights, expected, unit = merge_outcome(before, merged)
# in units of the adapter's largest delta entry: bfloat16 keeps 8 significant bits of W + BA
measure_error("merged weights", merged_weights.float() / unit, expected / unit)
