"""Gradient accumulation with accelerate, BROKEN: `accelerator.clip_grad_norm_` on every
micro-step (accelerate#641, diffusers#8960): with fp16 on a GPU the second one raises
`unscale_() has already been called on this optimizer since the last update().`; on the CPU
(no GradScaler) each micro-step's partial gradients are clipped, silently."""

import copy

import torch
from accelerate import Accelerator
from tiny_gradscaler_unscale_twice import (
    ACCUMULATION,
    LR,
    MAX_NORM,
    build_llama,
    micro_batches,
    train_float32,
    weights,
)

from shared.checks import measure_error

accelerator = Accelerator(mixed_precision="fp16", gradient_accumulation_steps=ACCUMULATION)
device = accelerator.device
model = build_llama().to(device)
initial = weights(model)
reference = copy.deepcopy(model)
train_float32(reference, device)  # the same steps in float32, for the check below

optimizer = torch.optim.SGD(model.parameters(), lr=LR)
model, optimizer = accelerator.prepare(model, optimizer)
print("GradScaler:", type(accelerator.scaler).__name__ if accelerator.scaler else None)
for input_ids in micro_batches(device):
    with accelerator.accumulate(model):
        loss = model(input_ids=input_ids, labels=input_ids).loss
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), MAX_NORM)  # every micro-step
        optimizer.step()
        optimizer.zero_grad()

# Against the same steps in float32 (what moved the weights, trained minus initial):
measure_error("weight updates off float32 (clipped per micro-step)", weights(model) - initial,
              weights(reference) - initial)  # fmt: skip
