"""Stable Diffusion 2.x in float16 with the classic attention processor and upcast_attention=False,
BROKEN: attn1's q @ k^T overflows float16, the softmax gives NaN, the image is black."""

import torch
from diffusers.models.attention_processor import AttnProcessor
from tiny_sd21_upcast_attention import build_pipeline, generate

from shared.checks import measure_nan, pick_device

device = pick_device()

pipe = build_pipeline(upcast_attention=False)  # the UNet config's upcast_attention
pipe.unet.set_attn_processor(AttnProcessor())  # the classic processor (torch < 2.0's default)
pipe = pipe.to(device, torch.float16)
print("UNet:", pipe.unet.dtype, "| upcast_attention =", pipe.unet.config.upcast_attention)

with torch.no_grad():
    image = generate(pipe)
print("image:", image.dtype)
measure_nan("image", image)
