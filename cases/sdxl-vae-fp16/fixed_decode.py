"""Validation decodes latents by hand with the VAE in float32 for the decode, FIXED."""

import torch
from diffusers import AutoencoderKL, StableDiffusionXLPipeline
from tiny_sdxl_vae_fp16 import generate, reference_pixels, save_tiny_sdxl

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_sdxl()  # tiny random SDXL, saved in float32

# Training setup: the frozen VAE in the mixed-precision dtype (it encodes every batch).
vae = AutoencoderKL.from_pretrained(checkpoint, subfolder="vae", torch_dtype=torch.float16)
vae = vae.to(device)
pipe = StableDiffusionXLPipeline.from_pretrained(checkpoint, vae=vae, torch_dtype=torch.float16)
pipe = pipe.to(device)

for step in (0, 1):  # validation: sample, then decode by hand for the logger
    latents = generate(pipe, "latent")
    vae.to(torch.float32)  # the fix: decode in float32 (latents too), back to float16 after
    with torch.no_grad():
        decoded = vae.decode(latents.float() / vae.config.scaling_factor, return_dict=False)[0]
    vae.to(torch.float16)
    image = pipe.image_processor.postprocess(decoded, output_type="pt")
    print(f"validation {step}: latents {latents.dtype}, image {image.dtype}")
expected = reference_pixels(checkpoint, latents)  # float32 decode of the same latents
# tolerance: float16's, the VAE's weights were rounded to float16 when it was loaded
compare_to_reference("decoded image", image, expected, dtype=torch.float32, atol=1e-2, rtol=1e-2)
