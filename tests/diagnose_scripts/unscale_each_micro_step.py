"""Gradient accumulation with a GradScaler that unscales (to clip) on every micro-step, as in
Swin-Transformer#311's loop: a small classifier, torch's CPU GradScaler (torch >= 2.3)."""

import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu")
for step in range(4):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(torch.randn(4, 8)), torch.tensor([0, 1, 2, 0]))
    scaler.scale(loss / 2).backward()
    scaler.unscale_(optimizer)  # every micro-step: the second one before update() raises
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if step % 2 == 1:
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
