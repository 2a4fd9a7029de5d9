"""A Llama cast to bfloat16, no autocast, on a left-padded batch, SDPA attention: transformers
builds the mask with bfloat16's own finite minimum, so no row turns NaN."""

import torch
from tiny_autocast_left_padding_nan import cpu, left_padded_batch, real_token_logits, tiny_llama

from shared.checks import compare_to_reference

device = cpu()
model = tiny_llama("sdpa").to(device)  # transformers' default attention on torch >= 2.1.1
batch = {name: tensor.to(device) for name, tensor in left_padded_batch().items()}
reference = real_token_logits(model, batch)  # float32, no autocast

model.to(torch.bfloat16)  # the fix: bfloat16 weights, the mask built in bfloat16, no autocast
logits = real_token_logits(model, batch)
print("logits:", logits.dtype, "| NaN rows:", logits.isnan().any(-1).tolist())
# the logits stay within +-0.7: atol 1e-2, not bfloat16's default 5e-2
compare_to_reference("logits at the real tokens", logits, reference, dtype=torch.bfloat16,
                     atol=1e-2)  # fmt: skip
