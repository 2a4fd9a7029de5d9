"""Placement check (CPU stand-in for the CUDA error), BROKEN: the list-held tower stays behind.

The same program as broken.py up to the move, then the device-consistency check the fix adds
runs instead of the forward. Moving the LoRA-wrapped model to another device leaves every
parameter of the vision tower where it was, because the tower lives in a plain Python list:
    AssertionError: placement before training: 37 of 68 parameters the forward uses are not
    on meta (base_model.model.vision_tower[0]: 37), ...
The other device is CUDA where there is one; on a CPU-only machine it is `meta`, a real torch
device that `.to()` moves parameters to (no forward runs there: this checks placement only).
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

print("vision tower (list-held):", model.vpm.device)
print("llm:", model.llm.device)
assert_placement(model, other_device)  # the check the fix runs before training
