"""SDXL in float16, its VAE config saying force_upcast=False, BROKEN: NaN pixels, a black image."""

import torch
from diffusers import StableDiffusionXLPipeline
from tiny_sdxl_vae_fp16 import generate, save_tiny_sdxl

from shared.checks import measure_nan, pick_device

device = pick_device()
checkpoint = save_tiny_sdxl()  # tiny random SDXL, saved in float32

pipe = StableDiffusionXLPipeline.from_pretrained(checkpoint, torch_dtype=torch.float16)
pipe = pipe.to(device)
print("VAE:", pipe.vae.dtype, "| config force_upcast =", pipe.vae.config.force_upcast)

image = generate(pipe, "pil")[0]  # the image users save
print("PIL image, (min, max) per channel:", image.getextrema())

pixels = generate(pipe, "pt")  # the same seeded run, as a tensor
print("pixels:", pixels.dtype)
measure_nan("image", pixels)
