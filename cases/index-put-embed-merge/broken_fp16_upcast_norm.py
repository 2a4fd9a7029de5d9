"""Idefics2 fine-tuned the LLaMA-Factory way: loaded in float16, every norm's weight upcast to
float32 (upcast_layernorm), the step under float16 autocast (--fp16). The perceiver's last RMSNorm
multiplies by its float32 weight, so the image features come out float32 while the text
embeddings are float16, and the masked assignment that merges them does not promote."""

import torch
from tiny_index_put_embed_merge import head_output, idefics2_inputs, tiny_idefics2, upcast_norms

from shared.checks import compare_to_reference, pick_device

device = pick_device()
model = tiny_idefics2().to(device)
inputs = idefics2_inputs(device)
reference = head_output(model, inputs)  # float32, no autocast

model.to(torch.float16)
upcast_norms(model)
with torch.autocast(device.type, dtype=torch.float16):
    logits = head_output(model, inputs)  # raises in inputs_merger
compare_to_reference("logits", logits, reference, dtype=torch.float16)
