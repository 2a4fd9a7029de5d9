"""The broken script's padded batch under CPU bfloat16 autocast, with eager attention: the
float32 padding mask is added to the bfloat16 scores, which promotes instead of refusing, and no
SDPA call sees it."""

import torch
from tiny_cpu_autocast_mha_mask import cpu, padded_batch, real_token_logits, tiny_llama

from shared.checks import compare_to_reference

device = cpu()
model = tiny_llama("eager").to(device)  # the fix: eager attention adds the mask, promoting
batch = {name: tensor.to(device) for name, tensor in padded_batch().items()}
reference = real_token_logits(model, batch)  # float32, no autocast

with torch.autocast("cpu", dtype=torch.bfloat16):
    logits = real_token_logits(model, batch)
# the logits stay within +-0.7: atol 1e-2, not bfloat16's default 5e-2
compare_to_reference("logits", logits, reference, dtype=torch.bfloat16, atol=1e-2)
