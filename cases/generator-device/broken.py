"""SDXL left on the CPU, seeded with a CUDA generator: diffusers' randn_tensor refuses it."""

import sys

import torch
from diffusers import StableDiffusionXLPipeline
from tiny_generator_device import SEED, generate, save_tiny_sdxl

from shared.checks import compare_to_reference, pick_device

if not torch.cuda.is_available():  # a CUDA generator cannot be made without a CUDA device
    print("broken.py needs CUDA: torch.Generator(device='cuda') needs a CUDA device (README.md).")
    sys.exit(2)
device = pick_device()
checkpoint = save_tiny_sdxl()  # tiny random SDXL, saved in float32

pipe = StableDiffusionXLPipeline.from_pretrained(checkpoint)  # float32, left on the CPU
generator = torch.Generator(device="cuda").manual_seed(SEED)  # as many examples write it
print("pipeline runs on:", pipe._execution_device, "| generator on:", generator.device)

image = generate(pipe, generator)  # prepare_latents -> randn_tensor(..., device=cpu)

# The same seed drawn on the CPU, the pipeline on CUDA: the image the seed stands for.
torch.backends.cudnn.allow_tf32 = False  # float32 convolutions on CUDA too, as on the CPU
reference = StableDiffusionXLPipeline.from_pretrained(checkpoint).to(device)
expected = generate(reference, torch.Generator(device="cpu").manual_seed(SEED))
# float32 both, CPU vs CUDA kernels: 1e-2 on pixels in [0, 1] (another seed: off by 0.69)
compare_to_reference("image", image, expected, dtype=torch.float32, atol=1e-2, rtol=1e-2)
