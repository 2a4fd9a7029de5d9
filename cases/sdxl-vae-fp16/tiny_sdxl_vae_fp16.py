"""A tiny SDXL: real StableDiffusionXLPipeline, UNet (text_time), AutoencoderKL, Euler scheduler.

The trait behind the black image is the SDXL VAE's: its decoder carries huge activations (far
beyond float16's 65504) that its GroupNorms renormalise, so float32 output is fine while
float16 overflows to inf, and inf - inf in the next GroupNorm is NaN. Emulated here exactly:
the decoder of a tiny random VAE is rescaled so that the activations of its last up block reach
the knob ``decoder_peak_activation`` (2e5; realistic 1e5 .. 1e6) on a probe latent, while the
decoded image is unchanged (to 1e-6). ``save_fp16_fix_vae()`` saves the same VAE without that
scale: the idea of the community
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
from diffusers.image_processor import VaeImageProcessor
from diffusers.utils import logging as diffusers_logging

from shared.tiny_models import TINY_VAE, knob, save_pretrained_to_temp, tiny_seed

IMAGE_SIZE = 16  # pixels; the VAE halves it: 8 x 8 latents
TEXT_DIM, POOLED_DIM, TEXT_TOKENS = 8, 8, 4  # the two text encoders' outputs, stand-ins

diffusers_logging.set_verbosity_error()
diffusers_logging.disable_progress_bar()


def _peak_activation() -> float:
    """The largest |activation| the decoder's last up block reaches in float32 (the knob).

    Realistic range: SDXL's own VAE decoder goes past float16's 65504 on ordinary images
    (#4325: every image black in float16), in its mid and up blocks; one account logged 3.1e5
    inside an up block's resnet on a failing seed (dev.to, "The SDXL VAE overflow that decoded
    black images in fp16"). 1e5 .. 1e6: from 1.5x to 15x float16's maximum.
    """
    return knob("decoder_peak_activation", 2e5, (1e5, 1e6))


def _unet() -> UNet2DConditionModel:
    tiny_seed(0)
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


def _vae(peak_activation: float | None) -> AutoencoderKL:
    """The tiny VAE; with ``peak_activation``, its last up block rescaled to reach it."""
    tiny_seed(1)
    vae = AutoencoderKL(
        **TINY_VAE,
        sample_size=IMAGE_SIZE,
        scaling_factor=0.13025,  # SDXL's
        force_upcast=False,  # the config claims: safe to decode in float16
    )
    if peak_activation is not None:
        unscaled = _last_up_block_peak(vae.decoder, _probe_latents() / vae.config.scaling_factor)
        _scale_decoder_activations(vae.decoder, peak_activation / unscaled)
    return vae


def _probe_latents() -> torch.Tensor:
    """Latents of the size the pipeline decodes, unit variance like SDXL's (seeded)."""
    generator = torch.Generator().manual_seed(3)
    return torch.randn(1, 4, IMAGE_SIZE // 2, IMAGE_SIZE // 2, generator=generator)


@torch.no_grad()
def _last_up_block_peak(decoder, sample: torch.Tensor) -> float:
    """The largest |output| of any module of the decoder's last up block, in float32."""
    peaks = []
    hooks = [
        module.register_forward_hook(lambda _m, _i, out: peaks.append(out.abs().max().item()))
        for module in decoder.up_blocks[-1].modules()
    ]
    try:
        decoder(sample)
    finally:
        for hook in hooks:
            hook.remove()
    return max(peaks)


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
        vae=_vae(_peak_activation()),
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
    """The same VAE with its decoder activations not scaled up: the same image, small values."""
    return save_pretrained_to_temp(_vae(None))


def example_prompt(dtype: torch.dtype, device: torch.device) -> dict[str, torch.Tensor]:
    """What the two text encoders would return for one prompt, and the initial noise (seeded).

    The noise is drawn in float32 and cast, so that every dtype starts from the same noise:
    drawn in float16, it is other numbers on the CPU with torch 2.1 to 2.11 (measured).
    """
    generator = torch.Generator().manual_seed(1)
    embeds = torch.randn(1, TEXT_TOKENS, TEXT_DIM, generator=generator)
    pooled = torch.randn(1, POOLED_DIM, generator=generator)
    noise = torch.randn(1, 4, IMAGE_SIZE // 2, IMAGE_SIZE // 2, generator=generator)
    return {
        "prompt_embeds": embeds.to(device, dtype),
        "pooled_prompt_embeds": pooled.to(device, dtype),
        "latents": noise.to(device, dtype),
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


@torch.no_grad()
def reference_pixels(checkpoint: Path, latents: torch.Tensor) -> torch.Tensor:
    """The float32 reference of a decode: the checkpoint's VAE in float32 on these latents.

    What every fix controls is the decode; the latents (from the float16 UNet) are the same
    for the fix and its reference, so the comparison measures the decode alone.
    """
    vae = AutoencoderKL.from_pretrained(checkpoint, subfolder="vae", torch_dtype=torch.float32)
    vae = vae.to(latents.device)
    decoded = vae.decode(latents.float() / vae.config.scaling_factor, return_dict=False)[0]
    processor = VaeImageProcessor(vae_scale_factor=2 ** (len(vae.config.block_out_channels) - 1))
    return processor.postprocess(decoded, output_type="pt")
