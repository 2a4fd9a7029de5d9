"""Kosmos-2 run under bfloat16 autocast, as Trainer(bf16=True) and accelerate's mixed precision
run it: the text embeddings stay float32 (nn.Embedding is not on autocast's list), the image
features leave the projection's Linear in bfloat16, and the masked assignment that merges them
(inputs_embeds[mask] = image_embeds, an index_put) does not promote."""

import torch
from tiny_index_put_embed_merge import head_output, kosmos2_inputs, tiny_kosmos2

from shared.checks import compare_to_reference, pick_device

device = pick_device()
model = tiny_kosmos2().to(device)
inputs = kosmos2_inputs(device)
reference = head_output(model, inputs)  # float32, no autocast

with torch.autocast(device.type, dtype=torch.bfloat16):
    logits = head_output(model, inputs)  # raises in forward_embedding's merge
compare_to_reference("logits", logits, reference, dtype=torch.bfloat16)
