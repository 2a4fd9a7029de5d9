"""PixArt-Σ with a bfloat16 transformer and a VAE loaded on its own, BROKEN: float32 VAE."""

import torch
from diffusers import AutoencoderKL, PixArtSigmaPipeline
from tiny_pipeline_component_dtype import generate, reference_image, save_tiny_pixart_sigma

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_pixart_sigma()  # tiny random PixArt-Σ, saved in float32
reference = reference_image(PixArtSigmaPipeline, checkpoint, device, torch.bfloat16)

vae = AutoencoderKL.from_pretrained(checkpoint, subfolder="vae")  # float32, as saved
pipe = PixArtSigmaPipeline.from_pretrained(checkpoint, vae=vae, torch_dtype=torch.bfloat16)
pipe = pipe.to(device)
print("transformer:", pipe.transformer.dtype, "| VAE:", pipe.vae.dtype)

image = generate(pipe, torch.bfloat16)  # diffusers <= 0.32: raises in the VAE's decode
# diffusers >= 0.33 casts the latents to the VAE's dtype: a float32 image, bfloat16 tolerance
compare_to_reference("image", image, reference, dtype=torch.float32, atol=5e-2, rtol=5e-2)
