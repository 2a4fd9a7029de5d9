"""QLoRA's adapter merged into its base dequantized first: float32 W + BA, the delta kept."""

import torch
from peft import PeftModel
from tiny_qlora_merge_4bit import (
    before_merge,
    load_4bit,
    merge_outcome,
    save_tiny_checkpoint,
    save_trained_adapter,
)

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # the base model, bfloat16
adapter = save_trained_adapter(checkpoint)  # a LoRA adapter trained on it

base = load_4bit(checkpoint, device)  # BitsAndBytesConfig(load_in_4bit=True, nf4), as in training
base.dequantize()  # the fix: float32 weights holding exactly the 4-bit values trained on
model = PeftModel.from_pretrained(base, adapter)
before = before_merge(model)  # each base weight as the 4-bit layer computes with it, each delta
merged = model.merge_and_unload()  # a float32 merge: nothing re-quantized

merged_weights, expected, unit = merge_outcome(before, merged)
# in units of the adapter's largest delta entry: float32 rounding is ~1e-5 of it
compare_to_reference(
    "merged weights", merged_weights / unit, expected / unit, dtype=torch.float32, atol=1e-3, rtol=0
)
