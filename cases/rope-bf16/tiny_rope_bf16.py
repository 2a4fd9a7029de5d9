"""A tiny real Llama (LlamaForCausalLM, 1 layer, hidden 64) and a 3000-token example input.

RoPE rotates query and key by the angle ``position * inv_freq``: bfloat16 rounds ``inv_freq``
by up to 2**-8 relative (0.37 % here), which moves the angle by up to 0.54 rad at position
3000 (0.02 rad below 100). The cos table RoPE hands to attention shows it whatever the
weights; the logits show it too when attention is sharp (a large ``initializer_range``).
``max_position_embeddings=4096``: the 3000 tokens fit the table transformers < 4.38 cached at
init. Random seeded weights, saved with ``save_pretrained``; nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import LlamaForCausalLM

from shared.tiny_models import (
    long_rope_llama_config,
    quiet_hf_logging,
    save_pretrained_to_temp,
    tiny_seed,
)

SEQ_LEN = 3000  # tokens in the example input
LONG = 2000  # positions from here on are "long": where the rounded inv_freq shows

quiet_hf_logging()


def save_tiny_llama() -> Path:
    """Save the tiny Llama in float32 and return its folder."""
    tiny_seed(0)
    config = long_rope_llama_config()
    return save_pretrained_to_temp(LlamaForCausalLM(config))


def example_input_ids(device: torch.device) -> torch.Tensor:
    """SEQ_LEN random token ids (seeded), batch of one."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, 256, (1, SEQ_LEN), generator=generator).to(device)


def logits(model: LlamaForCausalLM, input_ids: torch.Tensor) -> torch.Tensor:
    """``lm_head`` over the last hidden state: the logits in the dtype lm_head made them.

    (``model(input_ids).logits`` holds the same values; transformers 4.x's LlamaForCausalLM
    then upcast them to float32, which would hide the dtype a fixed variant checks.)
    """
    return model.lm_head(model.model(input_ids=input_ids).last_hidden_state)


def rotary_embeddings(model: LlamaForCausalLM) -> list[torch.nn.Module]:
    """Every RoPE module of the model (each has an ``inv_freq`` buffer).

    One per attention layer in 4.36-4.42, one on ``LlamaModel`` in 4.48 and later, both in the
    releases between (4.44.2 and 4.45.2 seen here), where only the model's runs: hook them all
    rather than guess which one runs.
    """
    found = [
        module
        for module in model.modules()
        if type(module).__name__.endswith("RotaryEmbedding") and hasattr(module, "inv_freq")
    ]
    if not found:
        raise LookupError(f"no RotaryEmbedding module with inv_freq in {type(model).__name__}")
    return found


def inv_freq_dtypes(model: LlamaForCausalLM) -> str:
    """The dtype(s) of RoPE's ``inv_freq`` buffers, for the printout."""
    return ", ".join(sorted({str(m.inv_freq.dtype) for m in rotary_embeddings(model)}))


def record_cos(model: LlamaForCausalLM) -> list[torch.Tensor]:
    """A list that receives the cos table (SEQ_LEN x head_dim) each time RoPE runs.

    RoPE returns ``(cos, sin)``: (seq, head_dim) up to transformers 4.37, (batch, seq,
    head_dim) from 4.38; the last SEQ_LEN rows of either are the table of the input.
    """
    tables: list[torch.Tensor] = []

    def hook(module, args, output):
        cos = output[0] if isinstance(output, (tuple, list)) else output
        tables.append(cos.reshape(-1, cos.shape[-1])[-SEQ_LEN:].detach())

    for module in rotary_embeddings(model):
        module.register_forward_hook(hook)
    return tables


def long_cos(tables: list[torch.Tensor]) -> torch.Tensor:
    """The cos table record_cos received first, at the long positions (>= LONG)."""
    if not tables:
        raise RuntimeError("no RotaryEmbedding module ran: record_cos saw no cos table")
    return tables[0][LONG:]
