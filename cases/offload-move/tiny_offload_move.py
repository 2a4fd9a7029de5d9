"""A tiny Llama saved to a temporary folder, the device map that sends one layer to disk, and
token ids; nothing is downloaded.

A real ``LlamaForCausalLM`` (2 layers, hidden 32, vocabulary 64), random seeded float32 weights,
saved with ``save_pretrained``: the variants load it back with ``from_pretrained(...,
device_map=...)``, the path through which accelerate dispatches and offloads a model.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import torch
from transformers import LlamaForCausalLM

from shared.tiny_models import (
    knob,
    quiet_hf_logging,
    save_pretrained_to_temp,
    tiny_llama_config,
    tiny_seed,
)

quiet_hf_logging()

VOCAB, BATCH, TOKENS = 64, 2, 8

# Everything on the CPU except the second decoder layer, which accelerate offloads to disk: its
# weights stay in offload_folder and its parameters on the meta device until a forward needs them.
DEVICE_MAP = {
    "model.embed_tokens": "cpu",
    "model.layers.0": "cpu",
    "model.layers.1": "disk",
    "model.norm": "cpu",
    "lm_head": "cpu",
}


def save_tiny_checkpoint() -> Path:
    """Build the tiny Llama (float32, seeded), save it; return the folder."""
    tiny_seed(0)
    # RoPE base: Llama 2 uses 1e4, Llama 3 5e5; it sets the rotary inv_freq a cast rounds.
    rope_theta = knob("rope_theta", 1e4, (1e4, 5e5))
    config = tiny_llama_config(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, rope_theta=rope_theta
    )
    return save_pretrained_to_temp(LlamaForCausalLM(config))


def offload_folder() -> str:
    """A temporary folder for the offloaded weights, removed when the process exits."""
    folder = tempfile.mkdtemp(prefix="gallery-offload-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def rotary_inv_freq(model) -> torch.Tensor:
    """The rotary embedding's inv_freq buffer (where it lives differs across transformers)."""
    return next(buffer for name, buffer in model.named_buffers() if name.endswith(".inv_freq"))


def example_input_ids() -> torch.Tensor:
    """A seeded batch of token ids, (BATCH, TOKENS), on the CPU."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, VOCAB, (BATCH, TOKENS), generator=generator)
