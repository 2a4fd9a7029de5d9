"""InternLM-XComposer2-VL chat, FIXED: the model loaded in float32 (about twice the memory)."""

import torch
from tiny_xcomposer2 import (
    TinyXComposer2,
    example_image,
    example_input_ids,
    image_processor,
    save_tiny_checkpoint,
)

from shared.checks import compare_to_reference, pick_device

torch.set_grad_enabled(False)  # inference, as in the chat examples
device = pick_device()
checkpoint = save_tiny_checkpoint()  # tiny random weights, saved in float32

model = TinyXComposer2.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)  # the fix
image = image_processor()(example_image(), return_tensors="pt")["pixel_values"].to(device)
input_ids = example_input_ids(device)

# The root cause, visible before the chat step:
print("image from the processor:", image.dtype)
print("vision tower weights:", model.vit.vision_tower.dtype)
print("vision features:", model.vit(image).dtype, "(handed back in the image's dtype)")
print("vision_proj[0].weight:", model.vision_proj[0].weight.dtype)

logits = model(pixel_values=image, input_ids=input_ids).logits  # one chat step

reference = TinyXComposer2.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
compare_to_reference(
    "LLM logits",
    logits,
    reference(pixel_values=image, input_ids=input_ids).logits,
    dtype=torch.float32,
)
