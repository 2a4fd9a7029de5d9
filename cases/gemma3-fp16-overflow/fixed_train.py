"""Gemma 3 fine-tuned under bfloat16 autocast, no loss scaling: finite loss, every step taken."""

import math

import torch
from tiny_gemma3_fp16_overflow import (
    example_input_ids,
    next_token_logits,
    save_tiny_gemma3,
    snapshot,
)
from transformers import Gemma3ForCausalLM

from shared.checks import check_that, compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_gemma3()  # tiny random Gemma 3, saved in float32

# float32 master weights, 16-bit compute: what Trainer(fp16=True) sets up.
model = Gemma3ForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
reference = Gemma3ForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
autocast_dtype = torch.bfloat16  # the fix: float32's range
scaler = torch.amp.GradScaler(device.type, enabled=False)  # bfloat16 needs no loss scaling
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

input_ids = example_input_ids(device)
with torch.no_grad(), torch.autocast(device.type, dtype=autocast_dtype):
    output = next_token_logits(model, input_ids)  # before any step
before = snapshot(model)
losses, scales = [], []
for _ in range(5):
    optimizer.zero_grad()
    with torch.autocast(device.type, dtype=autocast_dtype):
        loss = model(input_ids=input_ids, labels=input_ids).loss
    scaler.scale(loss).backward()
    scaler.step(optimizer)  # skipped when the unscaled gradients hold inf or NaN
    scaler.update()  # ... and the scale halves
    losses.append(loss.item())
    scales.append(scaler.get_scale())
print("losses:", ", ".join(f"{value:.4f}" for value in losses))
print("GradScaler scale after each step:", ", ".join(f"{value:g}" for value in scales))
print(f"finite losses: {sum(map(math.isfinite, losses))} of {len(losses)}")

with torch.no_grad():
    expected = next_token_logits(reference, input_ids)
after = snapshot(model)
compare_to_reference("next-token logits", output, expected, dtype=torch.bfloat16)
check_that("loss", all(map(math.isfinite, losses)), f"{losses[0]:.4f} -> {losses[-1]:.4f}")
changed = sum(not torch.equal(before[name], after[name]) for name in before)
check_that("parameters changed by 5 steps", changed == len(before), f"{changed} of {len(before)}")
