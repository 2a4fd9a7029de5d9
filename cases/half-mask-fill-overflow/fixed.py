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

model = model.half()  # the fix: float16 weights, no autocast: the query and scores alike
logits = real_token_logits(model, batch)  # fills float16's own minimum, -65504
# the logits stay within +-0.4: atol 2e-3, not float16's default 1e-2
compare_to_reference("logits", logits, reference, dtype=torch.float16, atol=2e-3)
