"""Gradient accumulation with accelerate, FIXED: `accelerator.clip_grad_norm_` only when
`accelerator.sync_gradients`: once per optimizer step (accelerate's own example)."""

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

from shared.checks import compare_to_reference

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
        if accelerator.sync_gradients:  # once per optimizer step
            accelerator.clip_grad_norm_(model.parameters(), MAX_NORM)
        optimizer.step()
        optimizer.zero_grad()

# Against the same steps in float32 (what moved the weights, trained minus initial):
compare_to_reference("weight updates", weights(model) - initial, weights(reference) - initial,
                     dtype=torch.float32, atol=2e-4, rtol=1e-2)  # fp16: 3.2e-5 seen  # fmt: skip
