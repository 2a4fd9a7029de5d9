"""Idefics2 fine-tuned the LLaMA-Factory way (float16, norms upcast to float32, float16 autocast),
the image features cast to the text embeddings' dtype as they leave the connector (a forward
hook, LLaMA-Factory's fix): the merge meets one dtype."""

import torch
from tiny_index_put_embed_merge import head_output, idefics2_inputs, tiny_idefics2, upcast_norms

from shared.checks import compare_to_reference, pick_device

device = pick_device()
model = tiny_idefics2().to(device)
inputs = idefics2_inputs(device)
reference = head_output(model, inputs)  # float32, no autocast

model.to(torch.float16)
upcast_norms(model)
text_dtype = model.get_input_embeddings().weight.dtype  # what the merge writes into
model.model.connector.register_forward_hook(  # the fix: cast before the merge
    lambda module, args, output: output.to(text_dtype)
)
with torch.autocast(device.type, dtype=torch.float16):
    logits = head_output(model, inputs)
compare_to_reference("logits", logits, reference, dtype=torch.float16)
