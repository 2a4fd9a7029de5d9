"""A 4-bit bitsandbytes model moved after loading, `model.to(device)`: refused < 4.45."""

import torch
from tiny_bnb_quantized_to import example_input_ids, load_4bit, save_tiny_checkpoint

from shared.checks import check_that, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()
input_ids = example_input_ids(device)

model = load_4bit(checkpoint, device, torch.float32)  # BitsAndBytesConfig(load_in_4bit=True)
model = model.to(device)  # a move (to where it already is, as a script does): refused < 4.45
with torch.no_grad():
    logits = model(input_ids).logits
check_that("logits", bool(logits.isfinite().all()), f"{logits.dtype} logits on {logits.device}")
