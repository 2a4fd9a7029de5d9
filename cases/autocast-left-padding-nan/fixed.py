"""A Llama under CPU bfloat16 autocast on a left-padded batch, eager attention: the float32 mask
is added to the bfloat16 scores with type promotion, never cast, so no row turns NaN."""

import torch
from tiny_autocast_left_padding_nan import cpu, left_padded_batch, real_token_logits, tiny_llama

from shared.checks import compare_to_reference

device = cpu()
model = tiny_llama("eager").to(device)  # the fix: no SDPA, no mask cast by autocast
batch = {name: tensor.to(device) for name, tensor in left_padded_batch().items()}
reference = real_token_logits(model, batch)  # float32, no autocast

with torch.autocast("cpu", dtype=torch.bfloat16):
    logits = real_token_logits(model, batch)
print("logits:", logits.dtype, "| NaN rows:", logits.isnan().any(-1).tolist())
# the logits stay within +-0.7: atol 1e-2, not bfloat16's default 5e-2
compare_to_reference("logits at the real tokens", logits, reference, dtype=torch.bfloat16,
                     atol=1e-2)  # fmt: skip
