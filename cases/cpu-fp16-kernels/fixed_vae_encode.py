"""Stable Diffusion training's latent encoding on the CPU with the VAE in float32: it runs."""

import torch
from diffusers import AutoencoderKL
from tiny_cpu_fp16_kernels import cpu, example_pixels, save_tiny_vae

from shared.checks import compare_to_reference

device = cpu()  # accelerate found no GPU; the script kept its weight_dtype
checkpoint = save_tiny_vae()  # tiny random VAE, saved in float32
pixels = example_pixels()


def encode(vae: AutoencoderKL) -> torch.Tensor:
    """What examples/text_to_image does to each batch: encode(x).latent_dist, then scale.

    (The script samples the distribution; its mean is compared here: the CPU draws random
    numbers differently for float16 and float32 on some torch releases.)
    """
    latent_dist = vae.encode(pixels.to(vae.device, vae.dtype)).latent_dist
    return latent_dist.mean * vae.config.scaling_factor


with torch.no_grad():
    reference = encode(AutoencoderKL.from_pretrained(checkpoint, torch_dtype=torch.float32))

weight_dtype = torch.float32  # the fix: no fp16 on the CPU (--mixed_precision=no)
vae = AutoencoderKL.from_pretrained(checkpoint)
vae.requires_grad_(False)
vae.to(device, dtype=weight_dtype)  # as the script does with the frozen VAE
print("VAE:", vae.dtype, "on", vae.device)
with torch.no_grad():
    latents = encode(vae)
compare_to_reference("latents", latents, reference, dtype=weight_dtype)
