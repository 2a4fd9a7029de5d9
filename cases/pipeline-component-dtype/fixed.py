"""SD 1.5 in float16 with a VAE loaded on its own in float16 too, FIXED: one dtype."""

import torch
from diffusers import AutoencoderKL, StableDiffusionPipeline
from tiny_pipeline_component_dtype import (
    generate,
    reference_image,
    save_finetuned_vae,
    save_tiny_sd,
)

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint, vae_folder = save_tiny_sd(), save_finetuned_vae()  # tiny random, saved in float32
reference = reference_image(StableDiffusionPipeline, checkpoint, device, torch.float16, vae_folder)

vae = AutoencoderKL.from_pretrained(vae_folder, torch_dtype=torch.float16)  # the fix
pipe = StableDiffusionPipeline.from_pretrained(
    checkpoint, vae=vae, tokenizer=None, torch_dtype=torch.float16
)  # no tokenizer: the prompt comes as embeddings
pipe = pipe.to(device)
print("UNet:", pipe.unet.dtype, "| VAE:", pipe.vae.dtype)  # torch_dtype skipped the VAE passed in

image = generate(pipe, torch.float16)  # the whole pipeline in float16
compare_to_reference("image", image, reference, dtype=torch.float16)
