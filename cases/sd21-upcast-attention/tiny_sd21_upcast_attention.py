"""A tiny Stable Diffusion 2.x: real StableDiffusionPipeline, UNet, AutoencoderKL, CLIPTextModel.

The UNet has SD 2.x's traits (linear projections in its transformer blocks, v-prediction) and
its ``upcast_attention`` config; the CLIP tokenizer is built here from a byte-level vocabulary
(printable ASCII, no merges: one token per character). The trait behind the black image is the real model's:
attention logits in a self-attention (``attn1``) beyond float16's 65504, so that the product
``q @ k^T`` in float16 is inf and the softmax over it NaN. Emulated here: each ``attn1``'s query
and key projections gain one shared direction whose largest float32 logit on a probe run reaches
the knob ``attn1_logit_peak``; float32 handles that (a sharp softmax), float16 does not. Random
seeded weights; nothing is downloaded.
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
    """The largest float32 attention logit each ``attn1`` reaches on the probe run (the knob).

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
    return CLIPTokenizer.from_pretrained(folder, model_max_length=TEXT_TOKENS, pad_token="<|endoftext|>")


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
        up_block_types=("UpBlock2D", "UpBlock2D"),  # one transformer block: few attention rows
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
    _scale_attn1_logits(pipe, _logit_peak())
    return pipe


@torch.no_grad()
def _scale_attn1_logits(pipe: StableDiffusionPipeline, peak: float) -> None:
    """Give each attn1 a rank-one query-key direction whose largest logit on the probe is ``peak``.

    ``to_q`` and ``to_k`` both gain ``alpha * u v^T`` (v: a direction of the input, u: one of
    the first head's): token i's query and token j's key gain alpha (v.x_i) u and alpha (v.x_j) u,
    so the logits gain alpha^2 |u|^2 (v.x_i)(v.x_j) * scale. Its largest entries pick the same key
    (the token with the largest or smallest v.x) in every row, by a margin float16's rounding of
    q and k cannot reverse, so the float32 attention is one-hot there and the float16 one agrees
    when the product is computed in float32; only a uniform scale made near-tied rows flip.
    """
    layers = {name: module for name, module in pipe.unet.named_modules() if name.endswith("attn1")}
    inputs = {}

    def keep_input(name):
        def hook(module, args, kwargs):
            inputs.setdefault(name, args[0] if args else kwargs["hidden_states"])

        return hook

    hooks = [m.register_forward_pre_hook(keep_input(n), with_kwargs=True) for n, m in layers.items()]
    generate(pipe, steps=1)  # the probe: the first denoising step, float32
    for hook in hooks:
        hook.remove()
    generator = torch.Generator().manual_seed(tiny_seed(3))
    for name, attn in layers.items():
        head_dim = attn.to_q.out_features // attn.heads
        v = torch.randn(attn.to_q.in_features, generator=generator)
        u = torch.zeros(attn.to_q.out_features)
        u[:head_dim] = torch.randn(head_dim, generator=generator)
        v, u = v / v.norm(), u / u.norm()
        projections = inputs[name] @ v  # v.x of every token
        largest = max(projections.max() ** 2, projections.min() ** 2).item() * attn.scale
        alpha = (peak / largest) ** 0.5
        attn.to_q.weight.add_(alpha * torch.outer(u, v))
        attn.to_k.weight.add_(alpha * torch.outer(u, v))


def generate(pipe: StableDiffusionPipeline, steps: int = 2, latents=None) -> torch.Tensor:
    """#1614's prompt, two denoising steps at IMAGE_SIZE, seeded; the image as a tensor."""
    return pipe(
        PROMPT,
        height=IMAGE_SIZE,
        width=IMAGE_SIZE,
        num_inference_steps=steps,
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
