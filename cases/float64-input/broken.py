"""A photo scaled to 0..1 with NumPy (float64), preprocessed by diffusers' VaeImageProcessor
(which keeps a NumPy array's dtype) and encoded by a float32 Stable Diffusion VAE."""

import numpy as np
import torch
from tiny_float64_input import in_float64, photo, tiny_vae, vae_image_processor

from shared.checks import compare_to_reference

vae = tiny_vae()
image_processor = vae_image_processor(vae)

pixels = np.asarray(photo()) / 255.0  # NumPy's default float: float64
image = image_processor.preprocess(pixels)
print("image:", image.dtype, "| vae:", vae.dtype)

with torch.no_grad():
    reference = in_float64(vae).encode(image).latent_dist.mean.float()
    latents = vae.encode(image).latent_dist.mean  # raises in the encoder's first conv
compare_to_reference("latents", latents, reference, dtype=torch.float32)
