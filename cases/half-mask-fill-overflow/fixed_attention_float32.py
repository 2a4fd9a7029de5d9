"""DeBERTa under float16 autocast (Trainer's fp16=True, or torch.autocast by hand): the attention
fills the padding keys' scores with torch.finfo(query_layer.dtype).min, but its query is float32
(a float32 bias added to the projection autocast ran in float16) while the scores it fills came
from an autocast matmul in float16: float32's minimum, -3.4e38, does not fit in float16."""

import torch
from tiny_half_mask_fill_overflow import cpu, padded_batch, real_token_logits, tiny_deberta

from shared.checks import compare_to_reference

device = cpu()
model = tiny_deberta().to(device)
batch = {name: tensor.to(device) for name, tensor in padded_batch().items()}
reference = real_token_logits(model, batch)  # float32, no autocast


def outside_autocast(forward):  # the fix: attention in float32, its scores and query alike
    def run(*args, **kwargs):
        with torch.autocast(device.type, enabled=False):
            return forward(*args, **kwargs)

    return run


for layer in model.deberta.encoder.layer:  # the rest of the model stays under autocast
    layer.attention.self.forward = outside_autocast(layer.attention.self.forward)
with torch.autocast(device.type, dtype=torch.float16):
    logits = real_token_logits(model, batch)  # raises in DisentangledSelfAttention.forward
# the logits stay within +-0.4: atol 2e-3, not float16's default 1e-2
compare_to_reference("logits", logits, reference, dtype=torch.float16, atol=2e-3)
