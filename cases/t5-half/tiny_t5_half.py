"""A tiny T5 v1.1-style encoder: real ``T5EncoderModel``, gated-GELU feed-forward, 2 layers.

The trait behind the bug is real T5's (t5-v1_1, flan-t5): its feed-forward output projections
``wo`` produce activations far beyond float16's 65504, which the float32 residual stream carries
and the RMS layer norms renormalise. Emulated here by scaling every ``wo`` weight by
``WO_SCALE``: in float32 the normalised output is fine, in float16 ``wo`` overflows. Random
seeded weights, saved with ``save_pretrained`` so the variants load them back with
``from_pretrained`` (whose ``_keep_in_fp32_modules`` handling is the point). Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import T5Config, T5EncoderModel

from shared.tiny_models import quiet_hf_logging, save_pretrained_to_temp

WO_SCALE = 1e5  # feed-forward outputs of ~1e5: beyond float16, fine in float32
VOCAB, BATCH, TOKENS = 32, 2, 8

quiet_hf_logging()


def save_tiny_checkpoint() -> Path:
    """Build the tiny encoder (float32, seeded), scale every ``wo``, save it; return the folder."""
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=VOCAB,
        d_model=16,
        d_kv=4,
        d_ff=32,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        feed_forward_proj="gated-gelu",  # T5 v1.1: wi_0, wi_1 (gate), wo
        dropout_rate=0.0,
        tie_word_embeddings=False,
    )
    model = T5EncoderModel(config)
    with torch.no_grad():
        for block in model.encoder.block:
            block.layer[-1].DenseReluDense.wo.weight.mul_(WO_SCALE)
    return save_pretrained_to_temp(model)


def example_input_ids(device: torch.device) -> torch.Tensor:
    """A seeded batch of token ids, (BATCH, TOKENS)."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, VOCAB, (BATCH, TOKENS), generator=generator).to(device)
