"""A tiny SDXL: real StableDiffusionXLPipeline, UNet (text_time), AutoencoderKL, Euler scheduler.

What this case is about happens before any weight is used: where diffusers' ``randn_tensor``
draws the initial latents (``prepare_latents``) and each Euler step's noise, and from which
``torch.Generator``. The model only has to be a real pipeline that gets there: random seeded
weights, text encoders left out (None; prompt embeddings are passed in), saved with
``save_pretrained`` and loaded back with ``from_pretrained``. Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from diffusers import (
    AutoencoderKL,
    EulerDiscreteScheduler,
    StableDiffusionXLPipeline,
    UNet2DConditionModel,
)
from diffusers.utils import logging as diffusers_logging

from shared.tiny_models import TINY_VAE, save_pretrained_to_temp, tiny_seed

IMAGE_SIZE = 16  # pixels; the VAE halves it: 8 x 8 latents
TEXT_DIM, POOLED_DIM, TEXT_TOKENS = 8, 8, 4  # the two text encoders' outputs, stand-ins
SEED = 0  # the seed every variant gives its generator

diffusers_logging.set_verbosity_error()
diffusers_logging.disable_progress_bar()


def _unet() -> UNet2DConditionModel:
    time_embed_dim = 4  # SDXL's "text_time" added conditioning: pooled text + 6 size numbers
    return UNet2DConditionModel(
        sample_size=IMAGE_SIZE // 2,
        block_out_channels=(8, 16),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=4,
        cross_attention_dim=TEXT_DIM,
        attention_head_dim=2,
        addition_embed_type="text_time",
        addition_time_embed_dim=time_embed_dim,
        projection_class_embeddings_input_dim=POOLED_DIM + 6 * time_embed_dim,
    )


def _vae() -> AutoencoderKL:
    return AutoencoderKL(
        **TINY_VAE,
        sample_size=IMAGE_SIZE,
        scaling_factor=0.13025,  # SDXL's
    )


def save_tiny_sdxl() -> Path:
    """Save the tiny SDXL pipeline (float32, text encoders None) and return its folder."""
    tiny_seed(0)
    pipe = StableDiffusionXLPipeline(
        vae=_vae(),
        text_encoder=None,
        text_encoder_2=None,
        tokenizer=None,
        tokenizer_2=None,
        unet=_unet(),
        scheduler=EulerDiscreteScheduler(
            beta_start=0.00085,
            beta_end=0.012,
            beta_schedule="scaled_linear",
            timestep_spacing="leading",
            steps_offset=1,
        ),  # SDXL's scheduler config
        add_watermarker=False,
    )
    return save_pretrained_to_temp(pipe)


def example_prompt(device: torch.device) -> dict[str, torch.Tensor]:
    """What the two text encoders would return for one prompt (random, seeded)."""
    generator = torch.Generator().manual_seed(1)
    embeds = torch.randn(1, TEXT_TOKENS, TEXT_DIM, generator=generator)
    pooled = torch.randn(1, POOLED_DIM, generator=generator)
    return {"prompt_embeds": embeds.to(device), "pooled_prompt_embeds": pooled.to(device)}


def generate(pipe: StableDiffusionXLPipeline, generator: torch.Generator) -> torch.Tensor:
    """Two Euler steps at IMAGE_SIZE x IMAGE_SIZE from ``generator``: the image, a tensor."""
    pipe.set_progress_bar_config(disable=True)
    return pipe(
        **example_prompt(pipe._execution_device),
        height=IMAGE_SIZE,
        width=IMAGE_SIZE,
        num_inference_steps=2,
        guidance_scale=5.0,
        generator=generator,
        output_type="pt",
    ).images


def latent_shape(pipe: StableDiffusionXLPipeline) -> tuple[int, int, int, int]:
    """The shape of one image's initial latents: (1, unet in_channels, height, width)."""
    size = pipe.unet.config.sample_size
    return (1, pipe.unet.config.in_channels, size, size)
