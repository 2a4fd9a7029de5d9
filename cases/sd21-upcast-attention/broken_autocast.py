"""#1614 as filed: SD 2.1 in float16 with upcast_attention=True, run under torch.autocast(float16),
BROKEN: autocast casts attn1's upcast q and k back to float16 for baddbmm: NaN, a black image."""

import torch
from diffusers.models.attention_processor import AttnProcessor
from tiny_sd21_upcast_attention import build_pipeline, generate

from shared.checks import measure_nan, pick_device

device = pick_device()

pipe = build_pipeline(upcast_attention=True)  # SD 2.1's UNet config
pipe.unet.set_attn_processor(AttnProcessor())  # the classic processor (torch < 2.0's default)
pipe = pipe.to(device, torch.float16)
print("UNet:", pipe.unet.dtype, "| upcast_attention =", pipe.unet.config.upcast_attention)

with torch.no_grad(), torch.autocast(device.type, dtype=torch.float16):
    image = generate(pipe)
print("image:", image.dtype)
measure_nan("image", image)
