"""PixArt-Σ with a bfloat16 transformer and a VAE loaded in bfloat16 too, FIXED: one dtype."""

import torch
from diffusers import AutoencoderKL, PixArtSigmaPipeline
from tiny_pipeline_component_dtype import generate, reference_image, save_tiny_pixart_sigma

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_pixart_sigma()  # tiny random PixArt-Σ, saved in float32
reference = reference_image(PixArtSigmaPipeline, checkpoint, device, torch.bfloat16)

vae = AutoencoderKL.from_pretrained(checkpoint, subfolder="vae", torch_dtype=torch.bfloat16)  # fix
pipe = PixArtSigmaPipeline.from_pretrained(checkpoint, vae=vae, torch_dtype=torch.bfloat16)
pipe = pipe.to(device)
print("transformer:", pipe.transformer.dtype, "| VAE:", pipe.vae.dtype)

image = generate(pipe, torch.bfloat16)  # the whole pipeline in bfloat16
# bfloat16 transformer and VAE, 2 steps: atol 1e-1, not bfloat16's 5e-2 (see README)
compare_to_reference("image", image, reference, dtype=torch.bfloat16, atol=1e-1)
