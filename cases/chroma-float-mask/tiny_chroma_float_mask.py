"""A tiny real Chroma: ChromaPipeline with a tiny ChromaTransformer2DModel, T5 encoder and VAE.

The transformer and VAE configs are diffusers' own test configs for Chroma (1 double + 1 single
block, 2 heads of 16, text width 32; a one-block AutoencoderKL). The text encoder is a tiny
``T5EncoderModel`` (d_model 32) and its tokenizer a ``PreTrainedTokenizerFast`` built here from
a ``tokenizers`` WordLevel vocabulary with T5's special tokens (``<pad>`` 0, ``</s>`` 1,
``</s>`` appended to each prompt). Random seeded weights; nothing is downloaded.

Everything runs in float32: the bug is that the padding mask is a floating tensor at all, not
how precise it is, so float32 keeps rounding out of the figure.
"""

from __future__ import annotations

import functools
import math

import torch
from diffusers import (
    AutoencoderKL,
    ChromaPipeline,
    ChromaTransformer2DModel,
    FlowMatchEulerDiscreteScheduler,
)
from diffusers.utils import logging as diffusers_logging
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from tokenizers.processors import TemplateProcessing
from transformers import PreTrainedTokenizerFast, T5Config, T5EncoderModel

from shared.tiny_models import knob, quiet_hf_logging, tiny_seed

PROMPT = "a photo of a cat"  # 5 words + </s>: 6 tokens, a short prompt (#12116: "man")
NEGATIVE_PROMPT = "a painting of a dog"  # as long as PROMPT: at 7 tokens neither is padded
WORDS = ["a", "photo", "painting", "of", "cat", "dog"]
TEXT_DIM = 32  # T5's d_model = the transformer's joint_attention_dim
UNPADDED = 7  # max_sequence_length with no padding to mask: 6 tokens + the pad Chroma keeps

quiet_hf_logging()
diffusers_logging.disable_progress_bar()


def _tokenizer() -> PreTrainedTokenizerFast:
    """T5's special tokens and a word-level vocabulary: pads with <pad>, ends with </s>."""
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2} | {w: i + 3 for i, w in enumerate(WORDS)}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.post_processor = TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", vocab["</s>"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )


def _text_encoder(vocab_size: int) -> T5EncoderModel:
    tiny_seed(1)
    config = T5Config(
        vocab_size=vocab_size,
        d_model=TEXT_DIM,
        d_kv=8,
        d_ff=64,
        num_layers=1,
        num_heads=4,
        relative_attention_num_buckets=8,
    )
    return T5EncoderModel(config).eval()  # eval: no dropout


@functools.cache
def image_size() -> int:
    """The image's side in pixels, from the knob ``image_tokens``.

    The padding's share of the attention depends on how many image tokens attend beside it.
    Realistic: Chroma at 512 x 512 to 1024 x 1024 pixels, 1024 to 4096 image tokens (its VAE
    divides by 8, then 2 x 2 latent pixels make a token). This tiny VAE does not downscale.
    """
    tokens = knob("image_tokens", 1024, (1024, 4096))
    return 2 * math.isqrt(int(tokens))


def tiny_chroma() -> ChromaPipeline:
    """The tiny ChromaPipeline, float32, on the CPU."""
    tiny_seed(0)
    transformer = ChromaTransformer2DModel(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=TEXT_DIM,
        axes_dims_rope=[4, 4, 8],
        approximator_hidden_dim=32,
        approximator_layers=1,
        approximator_num_channels=16,
    )
    tiny_seed(2)
    vae = AutoencoderKL(
        sample_size=32,
        block_out_channels=(4,),
        layers_per_block=1,
        latent_channels=1,
        norm_num_groups=1,
        use_quant_conv=False,
        use_post_quant_conv=False,
        shift_factor=0.0609,
        scaling_factor=1.5035,
    )
    tokenizer = _tokenizer()
    pipe = ChromaPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=vae,
        text_encoder=_text_encoder(len(tokenizer)),
        tokenizer=tokenizer,
        transformer=transformer,
    )
    pipe.set_progress_bar_config(disable=True)
    return pipe


def generate(pipe: ChromaPipeline, **inputs) -> torch.Tensor:
    """Two steps at image_size() pixels square, seeded: the image as a float32 tensor.

    ``inputs``: the pipeline's own (``max_sequence_length``; the embeddings and masks from
    ``encode_prompt``); without embeddings, PROMPT and NEGATIVE_PROMPT.
    """
    if "prompt_embeds" not in inputs:
        inputs |= {"prompt": PROMPT, "negative_prompt": NEGATIVE_PROMPT}
    return pipe(
        **inputs,
        height=image_size(),
        width=image_size(),
        num_inference_steps=2,
        guidance_scale=5.0,
        generator=torch.Generator().manual_seed(3),
        output_type="pt",
    ).images


def describe_mask(mask: torch.Tensor) -> str:
    """A padding mask in one line: its dtype, how many tokens it keeps, its values."""
    kept = int(mask.count_nonzero())
    return f"{mask.dtype}, {kept} of {mask.shape[-1]} tokens kept, values {mask.unique().tolist()}"
