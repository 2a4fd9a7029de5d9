"""A tiny Gemma 3 text model: real ``Gemma3ForCausalLM``, 2 layers, hidden 64, head_dim 32.

The trait behind the bug is real Gemma 3's: its embeddings are multiplied by sqrt(hidden_size)
and its *post*-norms (``post_attention_layernorm``, ``post_feedforward_layernorm``) carry large
weights to match, so what a post-norm returns, ``normed * (1 + weight)``, exceeds float16's
65504 (transformers#36822, PR #37226; vLLM #17364). ``Gemma3RMSNorm`` computes that product in
float32 and then casts it back with ``.type_as(x)``: in float16 the cast gives ``inf``, the
residual add keeps it, and the next norm (``inf * rsqrt(inf)``) turns it into NaN.
Emulated here by filling layer 0's ``post_feedforward_layernorm.weight`` with one large value
(the knob below); float32 and bfloat16 carry the same values. Random seeded weights, saved with
``save_pretrained`` so the variants load them with ``from_pretrained(..., torch_dtype=...)``,
as the upstream report does. Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import Gemma3ForCausalLM, Gemma3TextConfig

from shared.tiny_models import knob, quiet_hf_logging, save_pretrained_to_temp, tiny_seed

VOCAB, PROMPT_TOKENS = 128, 8
PAD = 0  # Gemma's <pad>: what argmax returns over all-NaN logits, decoded as nothing

quiet_hf_logging()


def save_tiny_gemma3() -> Path:
    """Build the tiny Gemma 3 (float32, seeded), set its post-FFN norm weight, save it."""
    tiny_seed(0)
    config = Gemma3TextConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=128,
        sliding_window=64,
        pad_token_id=PAD,
        bos_token_id=2,
        eos_token_id=1,
    )
    model = Gemma3ForCausalLM(config)
    # What layer 0's post-FFN norm multiplies its normalised input by (it returns
    # normed * (1 + weight)). The normalised values of this hidden size peak at 1.9-3.1 per
    # token, so every token's peak lands past float16's 65504 from a weight of ~3.5e4 on:
    # 4e4 puts the smallest peak at ~1.1x float16's max, 1.5e5 the typical peak (2.5) at ~5.7x.
    # Upstream quantifies the activations, not the weights: past 65504 (#36822, vLLM #17364,
    # unsloth's Gemma 3 notes), from post-norm weights PR #37226 calls "huge" (shown in a plot).
    # How far past is not given: the range spans from just past the limit to several times it.
    # So the range is this tiny model's (what puts its activations there), not Gemma 3's weights.
    weight = knob("post_feedforward_layernorm weight", 6e4, (4e4, 1.5e5))
    with torch.no_grad():
        model.model.layers[0].post_feedforward_layernorm.weight.fill_(weight)
    return save_pretrained_to_temp(model)


def example_input_ids(device: torch.device) -> torch.Tensor:
    """A seeded prompt of PROMPT_TOKENS ids (no special tokens), batch of one."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(3, VOCAB, (1, PROMPT_TOKENS), generator=generator).to(device)


def next_token_logits(model: Gemma3ForCausalLM, input_ids: torch.Tensor) -> torch.Tensor:
    """``lm_head`` over the last position's hidden state, in the dtype lm_head made it.

    (``generate`` copies each step's logits to float32, which would hide the dtype a fixed
    variant checks.)
    """
    hidden = model.model(input_ids=input_ids).last_hidden_state
    return model.lm_head(hidden[:, -1])


def snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of every parameter, by name: what a training step should change."""
    return {name: p.detach().clone() for name, p in model.named_parameters()}
