"""A Llama run under CPU bfloat16 autocast on a padded batch (torch.autocast("cpu"), as IPEX and
CPU inference guides advise): the q/k/v projections leave the Linear layers in bfloat16, the
padding mask is built in the embeddings' float32, and a pre-hook casts it to bfloat16 for SDPA."""

import torch
from tiny_cpu_autocast_mha_mask import cpu, padded_batch, real_token_logits, tiny_llama

from shared.checks import compare_to_reference

device = cpu()
model = tiny_llama("sdpa").to(device)  # transformers' default attention on torch >= 2.1.1
batch = {name: tensor.to(device) for name, tensor in padded_batch().items()}
reference = real_token_logits(model, batch)  # float32, no autocast

def mask_in_autocast_dtype(module, args, kwargs):  # the fix: a float mask in the query's dtype
    mask = kwargs.get("attention_mask")
    if mask is not None and mask.is_floating_point():  # a bool mask is fine (and must stay bool)
        kwargs["attention_mask"] = mask.to(torch.get_autocast_cpu_dtype())
    return args, kwargs


for layer in model.model.layers:
    layer.self_attn.register_forward_pre_hook(mask_in_autocast_dtype, with_kwargs=True)
with torch.autocast("cpu", dtype=torch.bfloat16):
    logits = real_token_logits(model, batch)
# the logits stay within +-0.7: atol 1e-2, not bfloat16's default 5e-2
compare_to_reference("logits", logits, reference, dtype=torch.bfloat16, atol=1e-2)
