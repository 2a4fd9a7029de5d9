"""SDXL in float16, force_upcast=True, called under torch.autocast (float16), BROKEN: NaN."""

import torch
from diffusers import StableDiffusionXLPipeline
from tiny_sdxl_vae_fp16 import generate, save_tiny_sdxl

from shared.checks import measure_nan, pick_device

device = pick_device()
checkpoint = save_tiny_sdxl()  # tiny random SDXL, saved in float32

pipe = StableDiffusionXLPipeline.from_pretrained(checkpoint, torch_dtype=torch.float16)
pipe.vae.register_to_config(force_upcast=True)  # fixed.py's fix: the pipeline decodes in float32
pipe = pipe.to(device)
print("VAE:", pipe.vae.dtype, "| config force_upcast =", pipe.vae.config.force_upcast)

with torch.autocast(device.type, dtype=torch.float16):  # as in #4325; float16 is CUDA's default
    image = generate(pipe, "pil")[0]  # the image users save
    pixels = generate(pipe, "pt")  # the same seeded run, as a tensor
print("PIL image, (min, max) per channel:", image.getextrema())
print("pixels:", pixels.dtype)
measure_nan("image", pixels)
