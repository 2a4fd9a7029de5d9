"""Gemma 3 fine-tuned under float16 autocast with a GradScaler: NaN loss, every step skipped."""

import math

import torch
from tiny_gemma3_fp16_overflow import (
    example_input_ids,
    next_token_logits,
    save_tiny_gemma3,
    snapshot,
)
from transformers import Gemma3ForCausalLM

from shared.checks import measure_changed, measure_error, pick_device

device = pick_device()
checkpoint = save_tiny_gemma3()  # tiny random Gemma 3, saved in float32

# float32 master weights, 16-bit compute: what Trainer(fp16=True) sets up.
model = Gemma3ForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
reference = Gemma3ForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
autocast_dtype = torch.float16
scaler = torch.amp.GradScaler(device.type)
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
measure_error("next-token logits", output, expected)
measure_changed("parameters changed by 5 steps", before, after)
