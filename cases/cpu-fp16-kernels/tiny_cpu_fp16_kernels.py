"""Tiny real models a CPU user loads in float16: a Llama, a BERT encoder, a Stable Diffusion VAE.

Each is the smallest configuration of the real class (``LlamaForCausalLM``, ``BertModel``,
diffusers' ``AutoencoderKL``) whose forward reaches the op torch had no CPU float16 kernel for:
Llama's first projection (``addmm``), BERT's embedding LayerNorm, the VAE's first convolution
(``slow_conv2d``) and, when decoding, its nearest-neighbour upsampling. Random seeded float32
weights saved with ``save_pretrained``, loaded back through ``from_pretrained(..., dtype)``;
nothing is downloaded. The failures do not depend on sizes or values: the op refuses the dtype.
"""

from __future__ import annotations

from pathlib import Path

import torch
from diffusers import AutoencoderKL
from diffusers.utils import logging as diffusers_logging
from transformers import BertConfig, BertModel, LlamaForCausalLM

from shared.checks import record_device
from shared.tiny_models import (
    TINY_VAE,
    quiet_hf_logging,
    save_pretrained_to_temp,
    tiny_llama_config,
    tiny_seed,
)

VOCAB, TOKENS = 256, 12  # token ids of the example input
IMAGE_SIZE = 16  # pixels; the VAE halves it once: 8 x 8 latents

quiet_hf_logging()
diffusers_logging.set_verbosity_error()


def cpu() -> torch.device:
    """The CPU, on any machine: the missing kernels are CPU torch's (CUDA had them all)."""
    return record_device(torch.device("cpu"), "the failure is in CPU torch's float16 kernels")


def save_tiny_llama() -> Path:
    """A 2-layer LlamaForCausalLM (hidden 64), saved in float32; its folder."""
    tiny_seed(0)
    config = tiny_llama_config(vocab_size=VOCAB, max_position_embeddings=128)
    return save_pretrained_to_temp(LlamaForCausalLM(config))


def save_tiny_bert() -> Path:
    """A 2-layer BertModel (hidden 64), the encoder of a sentence-embedding model; its folder."""
    tiny_seed(0)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=64,
    )
    return save_pretrained_to_temp(BertModel(config))


def save_tiny_vae() -> Path:
    """An AutoencoderKL with two blocks (8, 16 channels), Stable Diffusion's layout; its folder."""
    tiny_seed(0)
    vae = AutoencoderKL(
        **TINY_VAE,
        sample_size=IMAGE_SIZE,
    )
    return save_pretrained_to_temp(vae)


def example_input_ids() -> torch.Tensor:
    """What a tokenizer returns for one short prompt: TOKENS seeded ids, batch of one."""
    return torch.randint(0, VOCAB, (1, TOKENS), generator=torch.Generator().manual_seed(1))


def example_pixels() -> torch.Tensor:
    """One float32 image in [-1, 1], as the training script's transforms give it."""
    generator = torch.Generator().manual_seed(1)
    return torch.rand(1, 3, IMAGE_SIZE, IMAGE_SIZE, generator=generator) * 2 - 1


def example_latents() -> torch.Tensor:
    """Denoised latents, as a pipeline hands them to the VAE (unscaled), float32."""
    generator = torch.Generator().manual_seed(2)
    return torch.randn(1, 4, IMAGE_SIZE // 2, IMAGE_SIZE // 2, generator=generator)


def llama_logits(model: LlamaForCausalLM, input_ids: torch.Tensor) -> torch.Tensor:
    """``lm_head`` over the last hidden state: the logits in the model's own dtype.

    (``model(input_ids).logits`` holds the same values; transformers 4.x's LlamaForCausalLM
    upcast them to float32, which would hide the dtype a fixed variant checks.)
    """
    return model.lm_head(model.model(input_ids=input_ids).last_hidden_state)


def sentence_embedding(model: BertModel, input_ids: torch.Tensor) -> torch.Tensor:
    """The [CLS] hidden state, L2-normalised: how BGE-style embedding models pool BERT."""
    cls = model(input_ids=input_ids).last_hidden_state[:, 0]
    return torch.nn.functional.normalize(cls, dim=-1)
