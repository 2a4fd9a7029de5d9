"""Not a case: a decoder whose cached path, from its fifth call on, mixes a NumPy table in.

From reports of generation failing at a later step only (the first, uncached pass works): a
rotary-style table made with NumPy is float64, and the cached path multiplies it into float32
queries inside the forward, where no module boundary sees it. Expected: a torch call inside a
model's forward that raised on its fifth call, after the calls whose torch calls `diagnose`
watches one by one: a note that names `--every-call`; with `--every-call`, the call itself (its
file and line) and float64 data as the mechanism."""

import numpy as np
import torch
from torch import nn


class CachedDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        q = self.proj(x)
        if self.calls < 5:  # the first passes: no cache yet
            return q
        table = torch.from_numpy(np.ones((16, 16)))  # NumPy's default float64
        return torch.matmul(q, table)


model = CachedDecoder()
tokens = torch.randn(2, 16)
with torch.no_grad():
    for step in range(6):
        tokens = model(tokens)
        print(f"step {step}: ok")
