"""A 4-bit bitsandbytes model loaded in bfloat16 (compute dtype and `torch_dtype`): no cast."""

import torch
from tiny_bnb_quantized_to import example_input_ids, load_4bit, save_tiny_checkpoint

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()
input_ids = example_input_ids(device)
with torch.no_grad():  # float32 compute over the same 4-bit weights: the reference
    reference = load_4bit(checkpoint, device, torch.float32)(input_ids).logits

model = load_4bit(checkpoint, device, torch.bfloat16)  # the fix: the dtype chosen at load
with torch.no_grad():
    logits = model(input_ids).logits
compare_to_reference("logits", logits, reference, dtype=torch.bfloat16)
