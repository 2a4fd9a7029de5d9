"""Placement check (CPU stand-in for the CUDA error), BROKEN: the list-held tower stays behind."""

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

print("vision tower (list-held):", model.vpm.device)
print("llm:", model.llm.device)
assert_placement(model, other_device)  # the check the fix runs before training
