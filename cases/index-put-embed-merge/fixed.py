"""Kosmos-2 run under bfloat16 autocast, the image features cast to the text embeddings' dtype as
they leave the projection (a forward hook, LLaMA-Factory's way): the merge meets one dtype."""

import torch
from tiny_index_put_embed_merge import head_output, kosmos2_inputs, tiny_kosmos2

from shared.checks import compare_to_reference, pick_device

device = pick_device()
model = tiny_kosmos2().to(device)
inputs = kosmos2_inputs(device)
reference = head_output(model, inputs)  # float32, no autocast

text_dtype = model.get_input_embeddings().weight.dtype  # what the merge writes into
model.image_to_text_projection.register_forward_hook(  # the fix: cast before the merge
    lambda module, args, output: (output[0].to(text_dtype), *output[1:])
)
with torch.autocast(device.type, dtype=torch.bfloat16):
    logits = head_output(model, inputs)
compare_to_reference("logits", logits, reference, dtype=torch.bfloat16)
