"""Placement check (CPU stand-in for the CUDA error), FIXED: the tower is moved explicitly.

As broken_placement.py, plus the fix: `model.vpm.to(device=..., dtype=...)` after
`model.to(...)`. The device-consistency check then finds every parameter the forward uses,
the list-held tower's included, on the other device (CUDA where there is one, else `meta`).
"""

import torch

from cases.omnilmm.tiny_omnilmm import (
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
