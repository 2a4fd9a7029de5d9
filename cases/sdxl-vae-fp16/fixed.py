"""SDXL in float16, its VAE config saying force_upcast=True, FIXED: the VAE decodes in float32."""

import torch
from diffusers import StableDiffusionXLPipeline
from tiny_sdxl_vae_fp16 import generate, reference_pixels, save_tiny_sdxl

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_sdxl()  # tiny random SDXL, saved in float32

pipe = StableDiffusionXLPipeline.from_pretrained(checkpoint, torch_dtype=torch.float16)
pipe.vae.register_to_config(force_upcast=True)  # the fix: what the VAE's config.json should say
pipe = pipe.to(device)
print("VAE:", pipe.vae.dtype, "| config force_upcast =", pipe.vae.config.force_upcast)

image = generate(pipe, "pil")[0]  # the image users save
print("PIL image, (min, max) per channel:", image.getextrema())

pixels = generate(pipe, "pt")  # the same seeded run, as a tensor
print("pixels:", pixels.dtype)
expected = reference_pixels(checkpoint, generate(pipe, "latent"))  # float32 decode, same latents
compare_to_reference("image", pixels, expected, dtype=torch.float32, atol=1e-2, rtol=1e-2)
