"""A tiny Stable Diffusion 2.x: real StableDiffusionPipeline, UNet, AutoencoderKL, CLIPTextModel.

The UNet has SD 2.x's traits (linear projections in its transformer blocks, v-prediction) and
its ``upcast_attention`` config; the CLIP tokenizer is built here from a byte-level vocabulary
(printable ASCII, no merges: one token per character). The trait behind the black image is the
real model's: attention logits in a self-attention (``attn1``) beyond float16's 65504, so that
the product ``q @ k^T`` in float16 is inf and the softmax over it NaN. Emulated here: every logit
of each ``attn1``'s first head carries one common offset, the knob ``attn1_logit_peak``; float32
handles that (the softmax ignores an offset common to a row), float16 does not. Random seeded
weights; nothing is downloaded.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import torch
from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
from diffusers.utils import logging as diffusers_logging
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

from shared.tiny_models import TINY_VAE, knob, quiet_hf_logging, tiny_seed

IMAGE_SIZE = 16  # pixels; the VAE halves it: 8 x 8 latents
TEXT_DIM, TEXT_TOKENS = 8, 16  # CLIP's hidden size (a stand-in), the tokenizer's max length
PROMPT = "a photo of an astronaut riding a horse on mars"  # #1614's prompt
NOISE_SEED = 2

diffusers_logging.set_verbosity_error()
diffusers_logging.disable_progress_bar()
quiet_hf_logging()


def _logit_peak() -> float:
    """The offset of every logit in each ``attn1``'s first head (the knob), float32's peak.

    showlab/Tune-A-Video#103 reports SD 2.1's q @ k^T products around 3e5 (past float16's
    65504: black images from the classic processor without ``upcast_attention``, fixed by
    computing it in float32). 1e5 .. 1e6: from 1.5x to 15x float16's maximum, around that figure.
    """
    return knob("attn1_logit_peak", 2e5, (1e5, 1e6))


def _tokenizer() -> CLIPTokenizer:
    """CLIP's tokenizer over printable ASCII with no merges, saved and loaded locally."""
    characters = [chr(code) for code in range(33, 127)]  # byte-level BPE maps these to themselves
    tokens = characters + [c + "</w>" for c in characters] + ["<|startoftext|>", "<|endoftext|>"]
    folder = Path(tempfile.mkdtemp(prefix="gallery-tokenizer-"))
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return CLIPTokenizer.from_pretrained(
        folder, model_max_length=TEXT_TOKENS, pad_token="<|endoftext|>"
    )


def _text_encoder(vocab_size: int) -> CLIPTextModel:
    tiny_seed(2)
    config = CLIPTextConfig(
        vocab_size=vocab_size,
        hidden_size=TEXT_DIM,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=TEXT_TOKENS,
        hidden_act="gelu",  # SD 2.x's OpenCLIP text encoder
    )
    return CLIPTextModel(config).eval()


def _unet(upcast_attention: bool) -> UNet2DConditionModel:
    tiny_seed(0)
    return UNet2DConditionModel(
        sample_size=IMAGE_SIZE // 2,
        block_out_channels=(8, 16),
        layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"),  # one transformer block (down path)
        norm_num_groups=4,
        cross_attention_dim=TEXT_DIM,
        attention_head_dim=(2, 4),  # SD 2.x gives a head size per block
        use_linear_projection=True,  # SD 2.x
        upcast_attention=upcast_attention,
    )


def build_pipeline(upcast_attention: bool) -> StableDiffusionPipeline:
    """The tiny SD 2.x pipeline in float32, its attn1 logits raised to the knob's peak."""
    tokenizer = _tokenizer()
    tiny_seed(1)
    vae = AutoencoderKL(**TINY_VAE, sample_size=IMAGE_SIZE)
    pipe = StableDiffusionPipeline(
        vae=vae,
        text_encoder=_text_encoder(len(tokenizer)),
        tokenizer=tokenizer,
        unet=_unet(upcast_attention),
        scheduler=DDIMScheduler(prediction_type="v_prediction"),  # SD 2.1 (768) is a v-model
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.set_progress_bar_config(disable=True)
    _offset_attn1_logits(pipe, _logit_peak())
    return pipe


@torch.no_grad()
def _offset_attn1_logits(pipe: StableDiffusionPipeline, peak: float) -> None:
    """Offset every logit of each attn1's first head by ``peak``, the same in each row.

    One input channel of attn1 is made constant (``norm1``'s weight 0, its bias 1 there), and
    the last query and key dimension of the first head read only that channel, times ``a``:
    every query and every key then holds ``a`` there, so every logit of that head gains
    ``scale * a^2 = peak``. The softmax ignores an offset common to a row: in float32 the
    attention is the model's own, while float16 cannot hold the logits (inf, then NaN). Each
    token's ``a`` is the same number, rounded alike in float16, so no row can change its
    winner (a rank-one direction through the tokens' own values did, on 6.5 % of seeds).
    """
    for block in pipe.unet.modules():
        if not (hasattr(block, "attn1") and hasattr(block, "norm1")):
            continue
        attn, norm = block.attn1, block.norm1
        constant = attn.to_q.in_features - 1  # the input channel every token holds as 1
        norm.weight[constant], norm.bias[constant] = 0.0, 1.0
        offset_dim = attn.to_q.out_features // attn.heads - 1  # the first head's last dimension
        a = (peak / attn.scale) ** 0.5
        for projection in (attn.to_q, attn.to_k):
            projection.weight[offset_dim] = 0.0
            projection.weight[offset_dim, constant] = a


def generate(pipe: StableDiffusionPipeline, latents=None) -> torch.Tensor:
    """#1614's prompt, two denoising steps at IMAGE_SIZE, seeded; the image as a tensor."""
    return pipe(
        PROMPT,
        height=IMAGE_SIZE,
        width=IMAGE_SIZE,
        num_inference_steps=2,
        guidance_scale=7.5,  # the pipeline's default
        generator=torch.Generator().manual_seed(NOISE_SEED),
        latents=latents,
        output_type="pt",
    ).images


def reference_image(device: torch.device) -> torch.Tensor:
    """The float32 reference: the same weights in float32, from the noise a float16 run draws."""
    from diffusers.utils.torch_utils import randn_tensor

    noise = randn_tensor(
        (1, 4, IMAGE_SIZE // 2, IMAGE_SIZE // 2),
        generator=torch.Generator().manual_seed(NOISE_SEED),
        dtype=torch.float16,  # the float16 pipeline draws its noise in float16
    )
    reference = build_pipeline(upcast_attention=False).to(device)
    with torch.no_grad():
        return generate(reference, latents=noise.float().to(device))
