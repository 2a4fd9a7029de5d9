"""A tiny Llama with a word-level tokenizer, and a tiny CLIP vision tower with its image processor.

Real transformers classes from small configs, random seeded float32 weights, nothing downloaded:
``LlamaForCausalLM`` (the text model ``generate`` runs) and a ``PreTrainedTokenizerFast`` built
from a ``tokenizers`` WordLevel vocabulary; ``CLIPVisionModel`` (its patch embedding is the
``Conv2d`` an image first meets) and a ``CLIPImageProcessor``. The tokenizer and the processor
return CPU tensors, as they always do: where those tensors go is what this case is about.
"""

from __future__ import annotations

import numpy as np
import torch
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from transformers import (
    CLIPImageProcessor,
    CLIPVisionConfig,
    CLIPVisionModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from shared.checks import compare_to_reference
from shared.tiny_models import quiet_hf_logging, tiny_seed

quiet_hf_logging()

PROMPT = "a photo of a cat"  # five ids: the tokenizer adds no special tokens
MIN_LENGTH = 8  # prompt and new ids: no end of sequence before the third new id
WORDS = ["a", "photo", "painting", "of", "cat", "dog"]
IMAGE_SIZE = 32  # pixels; CLIP's patch embedding cuts 8 x 8 patches


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3} | {w: i + 4 for i, w in enumerate(WORDS)}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        unk_token="<unk>",
    )  # fmt: skip


def tiny_llama(vocab_size: int) -> LlamaForCausalLM:
    """A float32 Llama on the CPU, as from_pretrained loads it."""
    tiny_seed(0)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    return LlamaForCausalLM(config).eval()


def check_generated(model: LlamaForCausalLM, output_ids: torch.Tensor) -> None:
    """The logits of a generated sequence on the model's device vs the same weights in float32
    on the CPU."""
    reference = tiny_llama(model.config.vocab_size)
    with torch.no_grad():
        logits = model(output_ids.to(model.device)).logits
        expected = reference(output_ids.cpu()).logits
    # float32 both, CUDA vs CPU kernels: 1e-4 on logits of order 0.1
    compare_to_reference("logits of the generated sequence", logits, expected, dtype=torch.float32,
                         atol=1e-4, rtol=1e-4)  # fmt: skip


def tiny_clip_vision() -> CLIPVisionModel:
    """A float32 CLIP vision tower on the CPU."""
    tiny_seed(0)
    config = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        image_size=IMAGE_SIZE,
        patch_size=8,
    )
    return CLIPVisionModel(config).eval()


def image_processor() -> CLIPImageProcessor:
    """CLIP's preprocessing (resize, center crop, normalize) at the tiny tower's size."""
    return CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )


def example_image() -> np.ndarray:
    """An RGB image as a user loads it: uint8, height x width x 3 (seeded noise)."""
    return np.random.default_rng(1).integers(0, 256, (48, 40, 3), dtype=np.uint8)
