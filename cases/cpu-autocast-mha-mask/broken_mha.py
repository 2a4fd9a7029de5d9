"""OpenCLIP's text attention under CPU autocast (pytorch#99012): ``nn.MultiheadAttention`` with
OpenCLIP's float32 causal mask and ``need_weights=False`` calls SDPA from
``multi_head_attention_forward``; autocast projected q/k/v to bfloat16 and left the mask float32,
and SDPA refuses to mix them on torch < 2.2."""

import torch
from tiny_cpu_autocast_mha_mask import attend, causal_float_mask, cpu, text_tokens, tiny_text_attention

from shared.checks import compare_to_reference

cpu()
embedding, attention = tiny_text_attention()
tokens, mask = text_tokens(), causal_float_mask()
reference = attend(embedding, attention, tokens, mask)  # float32, no autocast

with torch.autocast("cpu", dtype=torch.bfloat16):
    output = attend(embedding, attention, tokens, mask)  # raises in the attention's SDPA call
# the outputs stay within +-0.9: atol 1e-2, not bfloat16's default 5e-2
compare_to_reference("attention output", output, reference, dtype=torch.bfloat16, atol=1e-2)
