"""A 4-bit bitsandbytes model loaded onto its device (`device_map`): no move."""

import torch
from tiny_bnb_quantized_to import example_input_ids, load_4bit, save_tiny_checkpoint

from shared.checks import check_that, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()
input_ids = example_input_ids(device)

model = load_4bit(checkpoint, device, torch.float32)  # device_map={"": device}; the fix: no .to()
with torch.no_grad():
    logits = model(input_ids).logits
check_that("logits", bool(logits.isfinite().all()), f"{logits.dtype} logits on {logits.device}")
