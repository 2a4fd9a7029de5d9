"""Validation under torch.autocast (float16) with an fp16-fix VAE, FIXED: its values fit."""

import torch
from diffusers import AutoencoderKL, StableDiffusionXLPipeline
from tiny_sdxl_vae_fp16 import generate, reference_pixels, save_fp16_fix_vae, save_tiny_sdxl

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_sdxl()  # tiny random SDXL, saved in float32

# The fix: --pretrained_vae_model_name_or_path=madebyollin/sdxl-vae-fp16-fix, cast to float16
vae = AutoencoderKL.from_pretrained(save_fp16_fix_vae(), torch_dtype=torch.float16)
pipe = StableDiffusionXLPipeline.from_pretrained(checkpoint, vae=vae, torch_dtype=torch.float16)
pipe = pipe.to(device)
print("VAE:", pipe.vae.dtype, "| config force_upcast =", pipe.vae.config.force_upcast)

with torch.autocast(device.type, dtype=torch.float16):  # log_validation; float16 is CUDA's default
    image = generate(pipe, "pil")[0]  # the image logged to wandb / tensorboard
    pixels = generate(pipe, "pt")  # the same seeded run, as a tensor
print("PIL image, (min, max) per channel:", image.getextrema())
print("pixels:", pixels.dtype)
expected = reference_pixels(checkpoint, generate(pipe, "latent"))  # float32 decode, same latents
compare_to_reference("image", pixels, expected, dtype=torch.float16)
