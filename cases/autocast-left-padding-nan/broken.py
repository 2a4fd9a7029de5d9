"""A Llama under CPU bfloat16 autocast on a left-padded batch, SDPA attention: the mask cast to
bfloat16 holds -inf, the rows that see only padding are NaN, and the NaN reaches the real tokens."""

import torch
from tiny_autocast_left_padding_nan import cpu, left_padded_batch, real_token_logits, tiny_llama

from shared.checks import measure_nan

device = cpu()
model = tiny_llama("sdpa").to(device)  # transformers' default attention on torch >= 2.1.1
batch = {name: tensor.to(device) for name, tensor in left_padded_batch().items()}

with torch.autocast("cpu", dtype=torch.bfloat16):
    logits = real_token_logits(model, batch)
print("logits:", logits.dtype, "| NaN rows:", logits.isnan().any(-1).tolist())
measure_nan("logits at the real tokens", logits)
