"""A CLIP vision tower moved to CUDA, its pixel values moved with
`pixel_values = pixel_values.to(device)`: the Conv2d meets an input on its own device."""

import sys

import torch
from tiny_inputs_device import example_image, image_processor, tiny_clip_vision

from shared.checks import compare_to_reference, pick_device

if not torch.cuda.is_available():  # the tower runs on CUDA, the processor gives CPU tensors
    print(f"{sys.argv[0]} needs CUDA: the vision tower runs on CUDA (README.md).")
    sys.exit(2)
device = pick_device()
torch.backends.cudnn.allow_tf32 = False  # float32 convolutions on CUDA, as on the CPU
model = tiny_clip_vision().to(device)

pixel_values = image_processor()(images=example_image(), return_tensors="pt").pixel_values
pixel_values = pixel_values.to(device)  # the fix: keep what .to() returns
print("tower on:", model.device, "| pixel_values on:", pixel_values.device)

with torch.no_grad():
    features = model(pixel_values=pixel_values).pooler_output
    expected = tiny_clip_vision()(pixel_values=pixel_values.cpu()).pooler_output
# float32 both, CUDA vs CPU kernels: 1e-4 on layer-normed features of order 1
compare_to_reference("pooled image features", features, expected, dtype=torch.float32,
                     atol=1e-4, rtol=1e-4)  # fmt: skip
