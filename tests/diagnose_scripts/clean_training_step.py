"""Not a case: a clean float32 training step and a bfloat16 autocast forward: nothing to report."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(16, 8), torch.randint(0, 2, (16,))
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()
optimizer.step()
with torch.autocast("cpu", dtype=torch.bfloat16):
    print(model(x).dtype)
print(f"loss {float(loss):.3f}")
