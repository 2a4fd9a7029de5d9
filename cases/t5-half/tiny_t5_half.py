"""A tiny T5 v1.1-style encoder: real ``T5EncoderModel``, gated-GELU feed-forward, 2 layers.

The trait behind the bug is real T5's (t5-v1_1, flan-t5): its feed-forward output projections
``wo`` produce activations beyond float16's 65504, which the float32 residual stream carries
and the RMS layer norms renormalise. Emulated here by scaling each block's ``wo`` weight so that
its largest output, in float32 on the example input, is ``wo_peak`` (a knob): in float32 the
normalised output is fine, in float16 ``wo`` overflows. Random seeded weights, saved with
``save_pretrained`` so the variants load them back with ``from_pretrained`` (whose
``_keep_in_fp32_modules`` handling is the point). Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import T5Config, T5EncoderModel

from shared.tiny_models import knob, quiet_hf_logging, save_pretrained_to_temp, tiny_seed

VOCAB, BATCH, TOKENS = 32, 2, 8

quiet_hf_logging()


def save_tiny_checkpoint() -> Path:
    """Build the tiny encoder (float32, seeded), scale every ``wo``, save it; return the folder."""
    tiny_seed(0)
    # The largest |wo output| of each block in float32. Real checkpoints: 66246 in t5-base
    # (transformers#5651), ~1.2e5 in flan-t5-xl (FasterTransformer backend#95); float16 ends at
    # 65504. Realistic: just beyond float16 (7e4) to a few times beyond it (3e5).
    wo_peak = knob("wo_peak", 1.2e5, (7e4, 3e5))
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
    model = T5EncoderModel(config).eval()
    input_ids = example_input_ids(torch.device("cpu"))
    peaks: list[torch.Tensor] = []
    for block in model.encoder.block:  # in order: a block's input depends on those before it
        wo = block.layer[-1].DenseReluDense.wo
        handle = wo.register_forward_hook(lambda m, args, out: peaks.append(out.abs().max()))
        with torch.no_grad():
            model(input_ids=input_ids)
            wo.weight.mul_(wo_peak / peaks[-1])
        handle.remove()
    return save_pretrained_to_temp(model)


def example_input_ids(device: torch.device) -> torch.Tensor:
    """A seeded batch of token ids, (BATCH, TOKENS)."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, VOCAB, (BATCH, TOKENS), generator=generator).to(device)


def record_wo_outputs(model: T5EncoderModel) -> list[torch.Tensor]:
    """A list that receives each feed-forward ``wo``'s output (flattened) as it leaves ``wo``:
    before ``T5Block`` clamps float16 hidden states that hold an inf."""
    outputs: list[torch.Tensor] = []
    for block in model.encoder.block:
        wo = block.layer[-1].DenseReluDense.wo
        wo.register_forward_hook(lambda module, args, out: outputs.append(out.detach().flatten()))
    return outputs
