"""Validation under torch.autocast (float16), SDXL's own VAE in float32, BROKEN: NaN, black."""

import torch
from diffusers import AutoencoderKL, StableDiffusionXLPipeline
from tiny_sdxl_vae_fp16 import generate, save_tiny_sdxl

from shared.checks import measure_nan, pick_device

device = pick_device()
checkpoint = save_tiny_sdxl()  # tiny random SDXL, saved in float32

# Training scripts keep SDXL's own VAE in float32 ("to avoid NaN losses"), force_upcast=True:
vae = AutoencoderKL.from_pretrained(checkpoint, subfolder="vae", torch_dtype=torch.float32)
vae.register_to_config(force_upcast=True)  # as SDXL's config.json says; no help here
pipe = StableDiffusionXLPipeline.from_pretrained(checkpoint, vae=vae, torch_dtype=torch.float16)
pipe = pipe.to(device)
print("VAE:", pipe.vae.dtype, "| config force_upcast =", pipe.vae.config.force_upcast)

with torch.autocast(device.type, dtype=torch.float16):  # log_validation; float16 is CUDA's default
    image = generate(pipe, "pil")[0]  # the image logged to wandb / tensorboard
    pixels = generate(pipe, "pt")  # the same seeded run, as a tensor
print("PIL image, (min, max) per channel:", image.getextrema())
print("pixels:", pixels.dtype)
measure_nan("image", pixels)
