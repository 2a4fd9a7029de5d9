"""DeBERTa under bfloat16 autocast (Trainer's bf16=True, or torch.autocast by hand): the attention
fills the padding keys' scores with torch.finfo(query_layer.dtype).min, but its query is float32
(a float32 bias added to the projection autocast ran in bfloat16) while the scores it fills came
from an autocast matmul in bfloat16: float32's minimum, -3.4e38, lies past bfloat16's
largest finite value (3.39e38) and rounds to -inf."""

import torch
from tiny_half_mask_fill_overflow import cpu, padded_batch, real_token_logits, tiny_deberta

from shared.checks import compare_to_reference

device = cpu()
model = tiny_deberta().to(device)
batch = {name: tensor.to(device) for name, tensor in padded_batch().items()}
reference = real_token_logits(model, batch)  # float32, no autocast

with torch.autocast(device.type, dtype=torch.bfloat16):
    logits = real_token_logits(model, batch)  # raises in DisentangledSelfAttention.forward
# the logits stay within +-0.4: atol 1e-2, not bfloat16's default 5e-2
compare_to_reference("logits", logits, reference, dtype=torch.bfloat16, atol=1e-2)
