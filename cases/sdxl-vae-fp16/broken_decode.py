"""Validation decodes latents by hand with the float16 VAE of a training run, BROKEN: NaN."""

import torch
from diffusers import AutoencoderKL, StableDiffusionXLPipeline
from tiny_sdxl_vae_fp16 import generate, save_tiny_sdxl

from shared.checks import measure_nan, pick_device

device = pick_device()
checkpoint = save_tiny_sdxl()  # tiny random SDXL, saved in float32

# Training setup: the frozen VAE in the mixed-precision dtype (it encodes every batch).
vae = AutoencoderKL.from_pretrained(checkpoint, subfolder="vae", torch_dtype=torch.float16)
vae = vae.to(device)
pipe = StableDiffusionXLPipeline.from_pretrained(checkpoint, vae=vae, torch_dtype=torch.float16)
pipe = pipe.to(device)

for step in (0, 1):  # validation: sample, then decode by hand for the logger
    latents = generate(pipe, "latent")
    with torch.no_grad():
        decoded = vae.decode(latents / vae.config.scaling_factor, return_dict=False)[0]
    image = pipe.image_processor.postprocess(decoded, output_type="pt")
    print(f"validation {step}: latents {latents.dtype}, image {image.dtype}")
measure_nan("decoded image", image)
