"""OpenCLIP's text attention under CPU autocast, the mask cast first: in bfloat16 (the autocast
dtype) it matches the bfloat16 q/k/v that SDPA gets from ``multi_head_attention_forward``. A bool
mask would not do on torch < 2.2: that function turns it into a float mask of the input's dtype,
float32."""

import torch
from tiny_cpu_autocast_mha_mask import attend, causal_float_mask, cpu, text_tokens, tiny_text_attention

from shared.checks import compare_to_reference

cpu()
embedding, attention = tiny_text_attention()
tokens, mask = text_tokens(), causal_float_mask()
reference = attend(embedding, attention, tokens, mask)  # float32, no autocast

with torch.autocast("cpu", dtype=torch.bfloat16):
    mask = mask.to(torch.get_autocast_cpu_dtype())  # the fix: the mask in the query's dtype
    output = attend(embedding, attention, tokens, mask)
# the outputs stay within +-0.9: atol 1e-2, not bfloat16's default 5e-2
compare_to_reference("attention output", output, reference, dtype=torch.bfloat16, atol=1e-2)
