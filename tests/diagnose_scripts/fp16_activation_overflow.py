"""Not a case: a float16 MLP whose hidden activations pass float16's 65504.

From reports of fp16 runs turning NaN with no error, the overflow in a feed-forward projection
(huggingface/transformers#12225: Pegasus' fc2 output at 6e4, then inf; llama.cpp#27016: the
FFN projection the first non-finite result). Expected: the up-projection that first turned finite inputs into inf is named,
with overflow as the mechanism."""

import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(32, 64)
        self.act = nn.GELU()
        self.down = nn.Linear(64, 32)

    def forward(self, x):
        return self.down(self.act(self.up(x)))


torch.manual_seed(0)
model = FeedForward()
with torch.no_grad():
    model.up.weight.mul_(30000.0)  # activations near 1e6: finite in float32, inf in float16
model = model.half()
out = model(torch.randn(4, 32).half() * 4)
print("NaN or inf in the output:", bool((~torch.isfinite(out)).any()))
