"""Placement check (CPU stand-in for the CUDA error), FIXED: the tower is moved explicitly."""

import torch
from tiny_omnilmm import (
    add_lora,
    assert_placement,
    load_tiny_omnilmm,
    save_tiny_checkpoint,
)

from shared.checks import pick_device

device = pick_device()
other_device = device if device.type == "cuda" else torch.device("meta")
checkpoint = save_tiny_checkpoint()

model = add_lora(load_tiny_omnilmm(checkpoint, dtype=torch.float16))
model.to(other_device)
model.vpm.to(device=other_device, dtype=torch.float16)  # the fix: move the hidden tower too

print("vision tower (list-held):", model.vpm.device)
print("llm:", model.llm.device)
assert_placement(model, other_device)  # the check the fix runs before training
