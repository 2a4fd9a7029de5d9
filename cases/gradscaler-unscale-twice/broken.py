"""Gradient accumulation with a GradScaler, BROKEN: the loop unscales (to clip) on every
micro-step, so the second micro-step's `scaler.unscale_` raises `unscale_() has already been
called on this optimizer since the last update().` (Swin-Transformer#311's loop)."""

import copy

import torch
from tiny_gradscaler_unscale_twice import (
    ACCUMULATION,
    LR,
    MAX_NORM,
    build_llama,
    micro_batches,
    train_float32,
    weights,
)

from shared.checks import compare_to_reference, pick_device

device = pick_device()
model = build_llama().to(device)
initial = weights(model)
reference = copy.deepcopy(model)
train_float32(reference, device)  # the same steps in float32, for the check below

optimizer = torch.optim.SGD(model.parameters(), lr=LR)
scaler = torch.amp.GradScaler(device.type)
for step, input_ids in enumerate(micro_batches(device)):
    with torch.autocast(device.type, dtype=torch.float16):
        loss = model(input_ids=input_ids, labels=input_ids).loss / ACCUMULATION
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)  # every micro-step: the second one raises
    torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    if (step + 1) % ACCUMULATION == 0:
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()

# The proof: the fp16 steps moved the weights as the float32 steps did.
compare_to_reference(
    "weight updates",
    weights(model) - initial,
    weights(reference) - initial,
    dtype=torch.float32,
    atol=2e-4,  # float16 autocast's rounding: 3.2e-5 measured (pinned, CPU); updates reach 0.046
    rtol=1e-2,
)
