"""A Llama run under CPU bfloat16 autocast on a padded batch (torch.autocast("cpu"), as IPEX and
CPU inference guides advise): the q/k/v projections leave the Linear layers in bfloat16, the
padding mask is built in the embeddings' float32, and SDPA refuses to mix them on torch < 2.2."""

import torch
from tiny_cpu_autocast_mha_mask import cpu, padded_batch, real_token_logits, tiny_llama

from shared.checks import compare_to_reference

device = cpu()
model = tiny_llama("sdpa").to(device)  # transformers' default attention on torch >= 2.1.1
batch = {name: tensor.to(device) for name, tensor in padded_batch().items()}
reference = real_token_logits(model, batch)  # float32, no autocast

with torch.autocast("cpu", dtype=torch.bfloat16):
    logits = real_token_logits(model, batch)  # raises in the attention's SDPA call
# the logits stay within +-0.7: atol 1e-2, not bfloat16's default 5e-2
compare_to_reference("logits", logits, reference, dtype=torch.bfloat16, atol=1e-2)
