"""diffusers' "write your own pipeline" tutorial: torch.randn on CUDA from a CPU generator."""

import sys

import torch
from diffusers import StableDiffusionXLPipeline
from tiny_generator_device import SEED, latent_shape, save_tiny_sdxl

from shared.checks import check_that, compare_to_reference, pick_device

if not torch.cuda.is_available():  # the error compares a CPU generator with a CUDA tensor
    print("broken_torch_randn.py needs CUDA: a CPU generator meets a CUDA tensor (README.md).")
    sys.exit(2)
device = pick_device()
checkpoint = save_tiny_sdxl()  # tiny random SDXL, saved in float32
pipe = StableDiffusionXLPipeline.from_pretrained(checkpoint).to(device)  # its unet: the shape
shape = latent_shape(pipe)  # (batch, unet.config.in_channels, height // 8, width // 8)

generator = torch.manual_seed(SEED)  # as the tutorial seeds: the default generator, on the CPU
print("generator on:", generator.device, "| latents wanted on:", device)
latents = torch.randn(shape, generator=generator, device=device)

check_that("latents on the GPU", latents.device.type == "cuda", f"latents on {latents.device}")
expected = torch.randn(shape, generator=torch.Generator().manual_seed(SEED))  # the seed's draw
compare_to_reference("latents", latents, expected, dtype=torch.float32)
