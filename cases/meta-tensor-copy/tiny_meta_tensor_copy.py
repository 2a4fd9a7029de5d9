"""A tiny Llama saved as a sharded checkpoint, the device map that offloads one layer to disk, and
token ids; nothing is downloaded.

A real ``LlamaForCausalLM`` (2 layers, hidden 32, vocabulary 64), random seeded float32 weights,
saved with ``save_pretrained(max_shard_size=...)`` in several safetensors shards and an index, as
large checkpoints are. The variants build it on the meta device (``accelerate.init_empty_weights``),
load it with ``from_pretrained(device_map=...)``, or read its shards by hand.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import LlamaForCausalLM

from shared.tiny_models import quiet_hf_logging, tiny_llama_config, tiny_seed

quiet_hf_logging()

VOCAB, BATCH, TOKENS = 64, 2, 8
SHARD_SIZE = "20KB"  # the tiny model's ~90 KB of weights in several shards, as a 7B's in 2 to 30

# Everything on the CPU except the second decoder layer, which accelerate offloads to disk: its
# parameters stay on the meta device and its weights in offload_folder until a forward needs them.
DEVICE_MAP = {
    "model.embed_tokens": "cpu",
    "model.layers.0": "cpu",
    "model.layers.1": "disk",
    "model.norm": "cpu",
    "lm_head": "cpu",
}


def save_tiny_checkpoint() -> Path:
    """Build the tiny Llama (float32, seeded), save it in shards; return the folder."""
    tiny_seed(0)
    config = tiny_llama_config(vocab_size=VOCAB, hidden_size=32, intermediate_size=64)
    folder = Path(_temporary_folder("gallery-checkpoint-"))
    LlamaForCausalLM(config).save_pretrained(folder, max_shard_size=SHARD_SIZE)
    return folder


def shard_files(checkpoint: Path) -> list[Path]:
    """The checkpoint's shards, in the order its index lists them."""
    index = json.loads((checkpoint / "model.safetensors.index.json").read_text())
    return [checkpoint / name for name in dict.fromkeys(index["weight_map"].values())]


def read_shards(shards: list[Path]) -> dict[str, torch.Tensor]:
    """The tensors of the given shard files, as one state dict."""
    state_dict = {}
    for shard in shards:
        state_dict |= load_file(shard)
    return state_dict


def _temporary_folder(prefix: str) -> str:
    """A temporary folder removed when the process exits."""
    folder = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def offload_folder() -> str:
    """A temporary folder for the offloaded weights."""
    return _temporary_folder("gallery-offload-")


def example_input_ids() -> torch.Tensor:
    """A seeded batch of token ids, (BATCH, TOKENS), on the CPU."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, VOCAB, (BATCH, TOKENS), generator=generator)
