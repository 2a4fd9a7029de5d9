"""A tiny Stable-Diffusion-style UNet and one denoising step's inputs; nothing is downloaded.

A real ``UNet2DConditionModel`` (blocks of 8 and 16 channels, cross-attention width 8), random
seeded float32 weights. FreeU acts in the first two up blocks, on 4x4 and 8x8 skip features:
8x8 latents keep every size a power of 2, the case in which old diffusers did not upcast.
"""

from __future__ import annotations

import torch
from diffusers import UNet2DConditionModel
from diffusers.utils import logging

LATENT_CHANNELS, LATENT_SIZE, TEXT_TOKENS, TEXT_DIM = 4, 8, 4, 8
logging.set_verbosity_error()  # no notes from .to(dtype) in the output: only the evidence

FREEU = {"s1": 0.9, "s2": 0.2, "b1": 1.2, "b2": 1.4}  # diffusers' suggested values for SD 1.x


def build_unet() -> UNet2DConditionModel:
    """The tiny UNet in float32, fixed seed."""
    torch.manual_seed(0)
    return UNet2DConditionModel(
        sample_size=LATENT_SIZE,
        in_channels=LATENT_CHANNELS,
        out_channels=LATENT_CHANNELS,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        block_out_channels=(8, 16),
        layers_per_block=1,
        norm_num_groups=4,
        cross_attention_dim=TEXT_DIM,
        attention_head_dim=4,
    ).eval()


def unet_inputs(device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """(latents, timesteps, text states) of one step, the floating ones in ``dtype``."""
    generator = torch.Generator().manual_seed(1)
    latents = torch.randn(2, LATENT_CHANNELS, LATENT_SIZE, LATENT_SIZE, generator=generator)
    text_states = torch.randn(2, TEXT_TOKENS, TEXT_DIM, generator=generator)
    timesteps = torch.tensor([100, 700])
    return latents.to(device, dtype), timesteps.to(device), text_states.to(device, dtype)
