"""InternLM-XComposer2-VL chat with an fp16 model, FIXED: the examples' torch.cuda.amp.autocast."""

import sys

import torch
from tiny_xcomposer2 import (
    TinyXComposer2,
    example_image,
    example_input_ids,
    image_processor,
    logits_dtype,
    save_tiny_checkpoint,
)

from shared.checks import compare_to_reference, pick_device

if not torch.cuda.is_available():  # without CUDA it disables itself: the step fails as broken
    print("needs CUDA; CPU-runnable: broken.py, fixed.py, fixed_cast_image.py, fixed_fp32.py")
    sys.exit(2)
torch.set_grad_enabled(False)  # inference, as in the chat examples
device = pick_device()
checkpoint = save_tiny_checkpoint()  # tiny random weights, saved in float32

# As documented: the model loaded in float16.
model = TinyXComposer2.from_pretrained(checkpoint, torch_dtype=torch.float16).to(device)
image = image_processor()(example_image(), return_tensors="pt")["pixel_values"].to(device)
input_ids = example_input_ids(device)

# The root cause, visible before the chat step:
print("image from the processor:", image.dtype)
print("vision tower weights:", model.vit.vision_tower.dtype)
print("vision features:", model.vit(image).dtype, "(handed back in the image's dtype)")
print("vision_proj[0].weight:", model.vision_proj[0].weight.dtype)

with torch.cuda.amp.autocast():  # the fix, as the examples spelled it (deprecated)
    logits = model(pixel_values=image, input_ids=input_ids).logits  # one chat step

reference = TinyXComposer2.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
compare_to_reference(
    "LLM logits",
    logits,
    reference(pixel_values=image, input_ids=input_ids).logits,
    dtype=logits_dtype(torch.float16),
    atol=1e-2,  # float16 computation, whatever dtype the logits come back in
    rtol=1e-2,
)
