"""A tiny real Llama (LlamaForCausalLM, 1 layer, hidden 64) and a 3000-token example input.

RoPE rotates query and key by the angle ``position * inv_freq``: bfloat16 rounds ``inv_freq``
by up to 2**-8 relative (0.37 % here), which moves the angle by up to 0.54 rad at position
3000 (0.02 rad below 100). ``initializer_range=0.3`` makes attention sharp enough for the
logits to show it, while bfloat16 weights alone stay within 1 of float32.
``max_position_embeddings=4096``: the 3000 tokens fit the table transformers < 4.38 cached at
init. Random seeded weights, saved with ``save_pretrained``; nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from shared.tiny_models import quiet_hf_logging, save_pretrained_to_temp

SEQ_LEN = 3000  # tokens in the example input
LONG = 2000  # positions from here on are "long": where the rounded inv_freq shows

quiet_hf_logging()


def save_tiny_llama() -> Path:
    """Save the tiny Llama in float32 and return its folder."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        initializer_range=0.3,
    )
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


def rotary_embedding(model: LlamaForCausalLM) -> torch.nn.Module:
    """The model's LlamaRotaryEmbedding (one per model, or one per layer before 4.40)."""
    return next(m for m in model.modules() if type(m).__name__ == "LlamaRotaryEmbedding")


def record_cos(model: LlamaForCausalLM) -> list[torch.Tensor]:
    """A list that receives the cos table (SEQ_LEN x head_dim) each time RoPE runs."""
    tables: list[torch.Tensor] = []

    def hook(module, args, output):
        cos = output[0]
        tables.append(cos.reshape(-1, cos.shape[-1])[-SEQ_LEN:].detach())

    rotary_embedding(model).register_forward_hook(hook)
    return tables
