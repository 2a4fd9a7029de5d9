"""Not a case: an encoder that keeps its blocks in a plain Python list.

From reports of parts of a module that `model.to(device)` did not move because they were not
registered (openillumi.com, "Why model.cuda() Fails to Move Tensors to GPU"; on the GPU:
"Expected all tensors to be on the same device"); on a CPU-only machine the same bug shows with a dtype:
`.to(torch.float16)` leaves the listed blocks float32. Expected: the block in the list is named,
as a module no model registers."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mix = nn.Linear(width, width)

    def forward(self, x):
        return x + self.mix(self.norm(x))


class ListEncoder(nn.Module):
    def __init__(self, width=16, depth=2):
        super().__init__()
        self.embed = nn.Linear(4, width)
        self.blocks = [Block(width) for _ in range(depth)]  # a list, not an nn.ModuleList

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return x


model = ListEncoder().to(torch.float16)
print(model(torch.randn(2, 4, dtype=torch.float16)).shape)
