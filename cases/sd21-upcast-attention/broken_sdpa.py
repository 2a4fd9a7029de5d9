"""Stable Diffusion 2.x in float16 with diffusers' default processor on torch 2 (AttnProcessor2_0:
scaled_dot_product_attention) and upcast_attention=False, which that processor never reads:
BROKEN where torch's CPU SDPA kernel overflows float16 (torch 2.3, 2.4), clean from torch 2.5."""

import torch
from diffusers.models.attention_processor import AttnProcessor2_0
from tiny_sd21_upcast_attention import build_pipeline, generate

from shared.checks import measure_nan, pick_device

device = pick_device()

pipe = build_pipeline(upcast_attention=False)  # the UNet config's upcast_attention
pipe.unet.set_attn_processor(AttnProcessor2_0())  # torch 2's default: SDPA
pipe = pipe.to(device, torch.float16)
print("UNet:", pipe.unet.dtype, "| upcast_attention =", pipe.unet.config.upcast_attention)

with torch.no_grad():
    image = generate(pipe)
print("image:", image.dtype)
measure_nan("image", image)
