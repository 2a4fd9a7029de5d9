"""A Stable Diffusion VAE decoding in float32 on the CPU (what --no-half does): it runs."""

import torch
from diffusers import AutoencoderKL
from tiny_cpu_fp16_kernels import cpu, example_latents, save_tiny_vae

from shared.checks import compare_to_reference

device = cpu()  # the pipeline was loaded with torch_dtype=torch.float16 and never moved to CUDA
checkpoint = save_tiny_vae()  # tiny random VAE, saved in float32
latents = example_latents()


def decode(vae: AutoencoderKL) -> torch.Tensor:
    """The pipeline's last step: the image from the denoised latents, in the VAE's dtype."""
    scaled = (latents / vae.config.scaling_factor).to(vae.device, vae.dtype)
    return vae.decode(scaled).sample


with torch.no_grad():
    reference = decode(AutoencoderKL.from_pretrained(checkpoint, torch_dtype=torch.float32))

dtype = torch.float32  # the fix: float32 on the CPU
vae = AutoencoderKL.from_pretrained(checkpoint, torch_dtype=dtype).to(device)
print("VAE:", vae.dtype, "on", vae.device)
with torch.no_grad():
    image = decode(vae)
compare_to_reference("decoded image", image, reference, dtype=dtype)
