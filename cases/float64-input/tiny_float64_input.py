"""What the float64-input variants share: tiny float32 models from real library classes, and the
data users feed them as NumPy holds it (float64, NumPy's default float).

Real classes, tiny and seeded (``tiny_seed``); nothing is downloaded:
- a Stable Diffusion-layout ``AutoencoderKL`` and diffusers' own ``VaeImageProcessor``;
- ``Wav2Vec2ForCTC`` (its feature encoder's convolutions without bias, as the base checkpoints);
- ``PatchTSTForPrediction`` (a time-series transformer: a Linear embeds each patch);
- ``BertForSequenceClassification`` with two labels, for a class-weighted loss.

The data: a photo as PIL gives it (uint8), a recording and a sensor series as NumPy float64
arrays (what ``soundfile.read`` and ``DataFrame.values`` return by default), a batch of labels.
Each variant checks its output against the same model in float64 on the same float64 data,
cast back to float32: what the data meant, computed without rounding.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from diffusers import AutoencoderKL
from diffusers.image_processor import VaeImageProcessor
from PIL import Image
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    PatchTSTConfig,
    PatchTSTForPrediction,
    Wav2Vec2Config,
    Wav2Vec2ForCTC,
)

from shared.tiny_models import TINY_VAE, quiet_hf_logging, tiny_seed

quiet_hf_logging()

IMAGE_SIZE = 16  # pixels; the tiny VAE halves it
SAMPLING_RATE = 16_000
CONTEXT_LENGTH, CHANNELS = 32, 2  # the series: 32 time steps of 2 sensors


def in_float64(model: torch.nn.Module) -> torch.nn.Module:
    """A float64 copy of ``model``: the reference computation for float64 data."""
    return copy.deepcopy(model).double()


def tiny_vae() -> AutoencoderKL:
    tiny_seed(0)
    return AutoencoderKL(**TINY_VAE, sample_size=IMAGE_SIZE).eval()


def vae_image_processor(vae: AutoencoderKL) -> VaeImageProcessor:
    """The preprocessing diffusers' pipelines use (``pipe.image_processor``)."""
    return VaeImageProcessor(vae_scale_factor=2 ** (len(vae.config.block_out_channels) - 1))


def photo() -> Image.Image:
    """An RGB photo as ``Image.open(...).convert("RGB")`` gives it (uint8 pixels)."""
    pixels = np.random.default_rng(0).integers(0, 256, (IMAGE_SIZE, IMAGE_SIZE, 3), np.uint8)
    return Image.fromarray(pixels)  # uint8, 3 channels: RGB


def tiny_wav2vec2() -> Wav2Vec2ForCTC:
    tiny_seed(0)
    config = Wav2Vec2Config(
        vocab_size=32,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=(8, 8),
        conv_kernel=(10, 3),
        conv_stride=(5, 2),
        conv_bias=False,  # wav2vec2-base's feature encoder: convolutions without bias
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
    )
    return Wav2Vec2ForCTC(config).eval()


def recording() -> np.ndarray:
    """A tenth of a second of speech-like audio as ``soundfile.read(path)`` returns it: float64."""
    time = np.arange(SAMPLING_RATE // 10) / SAMPLING_RATE
    return 0.1 * np.sin(2 * np.pi * 220 * time) * np.hanning(time.size)


def tiny_patchtst() -> PatchTSTForPrediction:
    tiny_seed(0)
    config = PatchTSTConfig(
        num_input_channels=CHANNELS,
        context_length=CONTEXT_LENGTH,
        patch_length=8,
        patch_stride=8,
        prediction_length=8,
        d_model=16,
        num_attention_heads=2,
        num_hidden_layers=1,
        ffn_dim=32,
    )
    return PatchTSTForPrediction(config).eval()


def sensor_series() -> np.ndarray:
    """A batch of one series (time steps x sensors) as ``DataFrame.values`` gives it: float64."""
    steps = np.random.default_rng(0).standard_normal((1, CONTEXT_LENGTH, CHANNELS))
    return np.cumsum(steps, axis=1)


def tiny_classifier() -> BertForSequenceClassification:
    tiny_seed(0)
    config = BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        num_labels=2,
        hidden_dropout_prob=0.0,  # deterministic: the loss and its reference see the same logits
        attention_probs_dropout_prob=0.0,
    )
    return BertForSequenceClassification(config)


def labelled_batch() -> dict[str, torch.Tensor]:
    """Token ids as a tokenizer returns them, and imbalanced labels (six of class 0, two of 1)."""
    input_ids = torch.randint(1, 64, (8, 6), generator=torch.Generator().manual_seed(1))
    return {"input_ids": input_ids, "labels": torch.tensor([0, 0, 0, 1, 0, 0, 1, 0])}
