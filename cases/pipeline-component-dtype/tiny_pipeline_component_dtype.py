"""Tiny diffusers pipelines: real StableDiffusionPipeline and PixArtSigmaPipeline, saved float32.

Each is saved like a hub checkpoint (float32, ``save_pretrained``) so that the variants load it
the way users do: the pipeline with ``from_pretrained(..., torch_dtype=...)`` and one component
on its own, passed in. SD 1.5: a UNet (8, 16 channels, cross-attention), an AutoencoderKL and a
CLIPTextModel; its tokenizer is left out (None), the prompt embeddings are passed in. PixArt-Σ:
diffusers' test-size PixArtTransformer2DModel (2 layers) and the same AutoencoderKL; tokenizer
and T5 text encoder left out, its embeddings passed in. ``save_finetuned_vae()`` stands for a VAE
from another repository (sd-vae-ft-mse, an asymmetric VAE): same architecture, own weights.
Random seeded weights; nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from diffusers import (
    AutoencoderKL,
    DDIMScheduler,
    DiffusionPipeline,
    PNDMScheduler,
    StableDiffusionPipeline,
    UNet2DConditionModel,
)
from diffusers.utils import logging as diffusers_logging
from diffusers.utils.torch_utils import randn_tensor
from transformers import CLIPTextConfig, CLIPTextModel

from shared.tiny_models import TINY_VAE, save_pretrained_to_temp, tiny_seed

IMAGE_SIZE = 16  # pixels; the VAE halves it: 8 x 8 latents
LATENT_SIZE = IMAGE_SIZE // 2
CLIP_DIM, T5_DIM, TEXT_TOKENS = 8, 32, 4  # the text encoders' hidden sizes (stand-ins), tokens
NOISE_SEED = 2

diffusers_logging.set_verbosity_error()
diffusers_logging.disable_progress_bar()


def _vae(seed: int) -> AutoencoderKL:
    tiny_seed(seed)
    return AutoencoderKL(
        **TINY_VAE,
        sample_size=IMAGE_SIZE,
    )


def _unet() -> UNet2DConditionModel:
    tiny_seed(0)
    return UNet2DConditionModel(
        sample_size=LATENT_SIZE,
        block_out_channels=(8, 16),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=4,
        cross_attention_dim=CLIP_DIM,
        attention_head_dim=2,
    )


def _clip_text_encoder() -> CLIPTextModel:
    tiny_seed(2)
    config = CLIPTextConfig(
        hidden_size=CLIP_DIM, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
        vocab_size=100, max_position_embeddings=TEXT_TOKENS,
    )  # fmt: skip
    return CLIPTextModel(config)


def _pixart_transformer():
    """PixArt-Σ's transformer in diffusers' own test size (tests/pipelines/pixart_sigma)."""
    from diffusers import PixArtTransformer2DModel  # diffusers >= 0.28.1: imported when used

    tiny_seed(3)
    return PixArtTransformer2DModel(
        sample_size=LATENT_SIZE,
        num_layers=2,
        patch_size=2,
        attention_head_dim=8,
        num_attention_heads=3,
        caption_channels=T5_DIM,
        in_channels=4,
        cross_attention_dim=24,
        out_channels=8,  # learned sigma: the pipeline keeps the first 4 channels
        attention_bias=True,
        activation_fn="gelu-approximate",
        num_embeds_ada_norm=1000,
        norm_type="ada_norm_single",
        norm_elementwise_affine=False,
        norm_eps=1e-6,
    )


def save_tiny_sd() -> Path:
    """Save the tiny SD 1.5 pipeline (float32, no tokenizer, no safety checker)."""
    pipe = StableDiffusionPipeline(
        vae=_vae(1),
        text_encoder=_clip_text_encoder(),
        tokenizer=None,
        unet=_unet(),
        scheduler=PNDMScheduler(  # SD 1.5's scheduler config
            beta_start=0.00085,
            beta_end=0.012,
            beta_schedule="scaled_linear",
            skip_prk_steps=True,
            steps_offset=1,
        ),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    return save_pretrained_to_temp(pipe)


def save_tiny_pixart_sigma() -> Path:
    """Save the tiny PixArt-Σ pipeline (float32, no tokenizer, no text encoder)."""
    from diffusers import PixArtSigmaPipeline  # diffusers >= 0.28: imported when used

    pipe = PixArtSigmaPipeline(
        tokenizer=None,
        text_encoder=None,
        vae=_vae(1),
        transformer=_pixart_transformer(),
        scheduler=DDIMScheduler(),
    )
    return save_pretrained_to_temp(pipe)


def save_finetuned_vae() -> Path:
    """A VAE published on its own (like sd-vae-ft-mse): the same architecture, other weights."""
    return save_pretrained_to_temp(_vae(4))


def _embeddings(text_dim: int, dtype: torch.dtype, device: torch.device) -> dict[str, torch.Tensor]:
    """A prompt's and the empty negative prompt's embeddings, as a text encoder gives them.

    Drawn in float32 (seeded) and cast, so that every dtype starts from the same numbers.
    """
    embeds = torch.randn(2, 1, TEXT_TOKENS, text_dim, generator=torch.Generator().manual_seed(1))
    return {
        "prompt_embeds": embeds[0].to(device, dtype),
        "negative_prompt_embeds": embeds[1].to(device, dtype),
    }


def generate(
    pipe: DiffusionPipeline, dtype: torch.dtype, latents: torch.Tensor | None = None
) -> torch.Tensor:
    """Two denoising steps at IMAGE_SIZE x IMAGE_SIZE, seeded; the image as a tensor.

    ``dtype``: the dtype the caller computes the prompt embeddings in (the pipeline's). The
    pipeline draws the initial noise itself (``latents``: only the reference passes them).
    """
    pipe.set_progress_bar_config(disable=True)
    if isinstance(pipe, StableDiffusionPipeline):
        inputs = _embeddings(CLIP_DIM, dtype, pipe.device)
    else:  # PixArt-Σ
        inputs = _embeddings(T5_DIM, dtype, pipe.device)
        mask = torch.ones(1, TEXT_TOKENS, dtype=torch.long, device=pipe.device)
        inputs |= {"prompt_attention_mask": mask, "negative_prompt_attention_mask": mask}
        inputs |= {"negative_prompt": None}  # its default "" would clash with the embeddings
        inputs |= {"use_resolution_binning": False}  # PixArt's bins are for its real sizes
    return pipe(
        **inputs,
        height=IMAGE_SIZE,
        width=IMAGE_SIZE,
        num_inference_steps=2,
        guidance_scale=4.5,
        generator=torch.Generator().manual_seed(NOISE_SEED),
        latents=latents,
        output_type="pt",
    ).images


@torch.no_grad()
def reference_image(
    pipeline_class: type[DiffusionPipeline],
    checkpoint: Path,
    device: torch.device,
    noise_dtype: torch.dtype,
    vae_folder: Path | None = None,
) -> torch.Tensor:
    """The float32 reference: the same checkpoint (and separate VAE), all float32, same inputs.

    The pipeline under test draws its initial noise in the latents' dtype (``noise_dtype``),
    which gives other numbers than float32 on the CPU: the reference starts from that very
    noise, drawn as the pipeline draws it (``randn_tensor``, the same CPU generator).
    """
    noise = randn_tensor(
        (1, 4, LATENT_SIZE, LATENT_SIZE),
        generator=torch.Generator().manual_seed(NOISE_SEED),
        dtype=noise_dtype,
    )
    components = {} if vae_folder is None else {"vae": AutoencoderKL.from_pretrained(vae_folder)}
    if pipeline_class is StableDiffusionPipeline:
        components["tokenizer"] = None  # SD's tokenizer is not optional: say it is left out
    pipe = pipeline_class.from_pretrained(checkpoint, torch_dtype=torch.float32, **components)
    return generate(pipe.to(device), torch.float32, noise.float().to(device))
