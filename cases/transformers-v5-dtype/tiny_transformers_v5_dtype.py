"""Tiny checkpoints saved in a half dtype, as the Hub's bf16 LLMs and fp16 Whisper are.

``save_qwen2_bf16()``: a real ``Qwen2ForCausalLM`` (CosyVoice's LLM class; 2 layers, hidden 16,
biased q/k/v projections as in Qwen2) cast to bfloat16 and saved, so its config.json says
bfloat16. ``save_whisper_fp16()``: a real ``WhisperForConditionalGeneration`` (1 encoder + 1
decoder layer, 8 mel bins, 32 frames) cast to float16 and saved. ``feature_extractor()`` is a
real ``WhisperFeatureExtractor`` sized to match (one second of 16 kHz audio, hop 500: 32 frames);
``example_audio()`` is a seeded waveform. Random seeded weights; nothing is downloaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

from shared.tiny_models import quiet_hf_logging, save_pretrained_to_temp

HIDDEN = 16
SPEECH_VOCAB, BATCH, TOKENS = 24, 2, 6  # the caller's own speech tokens (not in the LLM's vocab)
MEL_BINS, SAMPLING_RATE, HOP = 8, 16000, 500
FRAMES = SAMPLING_RATE // HOP  # one second of audio: 32 mel frames

quiet_hf_logging()


def save_in_dtype(model: torch.nn.Module, dtype: torch.dtype) -> Path:
    """Cast ``model`` to ``dtype`` and save it; its config.json names ``dtype``, as the Hub's do.

    Every transformers but one writes the cast dtype there itself. 5.0.0rc1's
    ``PreTrainedModel.dtype`` returned the dtype the model was built in (cached at init; rc2
    reads the parameters again), so its ``save_pretrained`` wrote "float32" for a model cast to
    bfloat16: that one release gets the entry corrected here (the weights are untouched).
    """
    folder = save_pretrained_to_temp(model.to(dtype))
    config_file = folder / "config.json"
    config = json.loads(config_file.read_text())
    key = "dtype" if "dtype" in config else "torch_dtype"  # 4.56 renamed the entry
    wanted = str(dtype).removeprefix("torch.")
    if config.get(key) != wanted:
        config[key] = wanted
        config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return folder


def save_qwen2_bf16() -> Path:
    """A tiny Qwen2 (float32 init, seeded), cast to bfloat16 and saved; return the folder."""
    from transformers import Qwen2Config, Qwen2ForCausalLM  # transformers >= 4.37 (Whisper: any)

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=32,
        hidden_size=HIDDEN,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    return save_in_dtype(Qwen2ForCausalLM(config), torch.bfloat16)


def speech_token_ids(device: torch.device) -> torch.Tensor:
    """A seeded batch of the caller's speech-token ids, (BATCH, TOKENS)."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, SPEECH_VOCAB, (BATCH, TOKENS), generator=generator).to(device)


def save_whisper_fp16() -> Path:
    """A tiny Whisper (float32 init, seeded), cast to float16 and saved; return the folder."""
    torch.manual_seed(0)
    config = WhisperConfig(
        vocab_size=64,
        num_mel_bins=MEL_BINS,
        d_model=HIDDEN,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_source_positions=FRAMES // 2,  # the second conv has stride 2
        max_target_positions=16,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
    )
    return save_in_dtype(WhisperForConditionalGeneration(config), torch.float16)


def feature_extractor() -> WhisperFeatureExtractor:
    """A real WhisperFeatureExtractor sized for the tiny model (log-mel, float32 output)."""
    return WhisperFeatureExtractor(
        feature_size=MEL_BINS,
        sampling_rate=SAMPLING_RATE,
        hop_length=HOP,
        chunk_length=1,
        n_fft=400,
    )


def example_audio() -> np.ndarray:
    """Half a second of seeded noise plus a tone, float32 (padded to 1 s by the extractor)."""
    rng = np.random.default_rng(2)
    t = np.arange(SAMPLING_RATE // 2) / SAMPLING_RATE
    return (0.5 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(t.size)).astype(
        np.float32
    )


def saved_dtype(checkpoint: Path) -> str:
    """The dtype written in the checkpoint's config.json ("dtype"; older: "torch_dtype")."""
    config = json.loads((checkpoint / "config.json").read_text())
    return config.get("dtype") or config.get("torch_dtype")
