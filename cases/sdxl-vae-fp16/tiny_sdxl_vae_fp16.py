"""A tiny SDXL: real StableDiffusionXLPipeline, UNet (text_time), AutoencoderKL, Euler scheduler.

The trait behind the black image is the SDXL VAE's: its decoder carries huge activations (far
beyond float16's 65504) that its GroupNorms renormalise, so float32 output is fine while
float16 overflows to inf, and inf - inf in the next GroupNorm is NaN. Emulated here exactly:
the decoder of a tiny random VAE is rescaled so that every activation of its last up block is
``ACTIVATION_SCALE`` times larger, while the decoded image is unchanged (to 2e-7).
``save_fp16_fix_vae()`` saves the same VAE without that scale: the idea of the community
``sdxl-vae-fp16-fix`` (weights scaled down, output kept). Text encoders are left out (None):
prompt embeddings are passed in directly. Random seeded weights; nothing is downloaded.
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

from shared.tiny_models import save_pretrained_to_temp

ACTIVATION_SCALE = 3e4  # last up block: activations up to ~2e5 in float32, float16 max 65504
IMAGE_SIZE = 16  # pixels; the VAE halves it: 8 x 8 latents
TEXT_DIM, POOLED_DIM, TEXT_TOKENS = 8, 8, 4  # the two text encoders' outputs, stand-ins

diffusers_logging.set_verbosity_error()
diffusers_logging.disable_progress_bar()


def _unet() -> UNet2DConditionModel:
    torch.manual_seed(0)
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


def _vae(activation_scale: float) -> AutoencoderKL:
    torch.manual_seed(1)
    vae = AutoencoderKL(
        block_out_channels=(8, 16),
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        layers_per_block=1,
        latent_channels=4,
        norm_num_groups=4,
        sample_size=IMAGE_SIZE,
        scaling_factor=0.13025,  # SDXL's
        force_upcast=False,  # the config claims: safe to decode in float16
    )
    _scale_decoder_activations(vae.decoder, activation_scale)
    return vae


@torch.no_grad()
def _scale_decoder_activations(decoder, scale: float) -> None:
    """Multiply the activations of the decoder's last up block by ``scale``; output unchanged.

    GroupNorm(s * x) == GroupNorm(x), so a conv fed by a norm keeps its input and must scale
    its output (weight and bias); the first resnet's shortcut (16 -> 8 channels) scales the
    stream it is fed. conv_norm_out, a GroupNorm, removes the scale again. The big values sit
    in the up blocks, the part that diffusers < 0.36 upcast (``upcast_vae`` kept ``conv_in``
    and ``mid_block`` in float16).
    """
    last = decoder.up_blocks[-1]
    last.resnets[0].conv_shortcut.weight.mul_(scale)
    last.resnets[0].conv_shortcut.bias.mul_(scale)
    for resnet in last.resnets:
        resnet.conv2.weight.mul_(scale)  # fed by norm2
        resnet.conv2.bias.mul_(scale)


def save_tiny_sdxl() -> Path:
    """Save the tiny SDXL pipeline (float32, text encoders None) and return its folder."""
    pipe = StableDiffusionXLPipeline(
        vae=_vae(ACTIVATION_SCALE),
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


def save_fp16_fix_vae() -> Path:
    """The same VAE with its decoder activations scaled back down (no ACTIVATION_SCALE)."""
    return save_pretrained_to_temp(_vae(1.0))


def example_prompt(dtype: torch.dtype, device: torch.device) -> dict[str, torch.Tensor]:
    """What the two text encoders would return for one prompt (random, seeded)."""
    generator = torch.Generator().manual_seed(1)
    embeds = torch.randn(1, TEXT_TOKENS, TEXT_DIM, generator=generator)
    pooled = torch.randn(1, POOLED_DIM, generator=generator)
    return {
        "prompt_embeds": embeds.to(device, dtype),
        "pooled_prompt_embeds": pooled.to(device, dtype),
    }


def generate(pipe: StableDiffusionXLPipeline, output_type: str):
    """Two Euler steps at IMAGE_SIZE x IMAGE_SIZE, seeded: the image(s) in ``output_type``."""
    pipe.set_progress_bar_config(disable=True)
    return pipe(
        **example_prompt(pipe.unet.dtype, pipe.device),
        height=IMAGE_SIZE,
        width=IMAGE_SIZE,
        num_inference_steps=2,
        guidance_scale=5.0,
        generator=torch.Generator().manual_seed(2),
        output_type=output_type,
    ).images
