"""What the accelerate-fp16-no-cuda variants share: a tiny Llama, a batch, and a record of the
dtype each linear layer computed in (what mixed precision really did).

Real classes, tiny and seeded (``tiny_seed``); nothing is downloaded.
"""

from __future__ import annotations

import torch
from transformers import LlamaForCausalLM

from shared.checks import linear_outputs  # noqa: F401 - its scripts take it from here
from shared.tiny_models import quiet_hf_logging, tiny_llama_config, tiny_seed

quiet_hf_logging()


def tiny_model() -> LlamaForCausalLM:
    """A float32 Llama (2 layers, hidden 64), as a training script loads it."""
    tiny_seed(0)
    config = tiny_llama_config()
    return LlamaForCausalLM(config)


def example_input_ids() -> torch.Tensor:
    """A batch of 2 sequences of 16 token ids, as a tokenizer gives it."""
    return torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(1))


class TokenDataset(torch.utils.data.Dataset):
    """Token ids as a Trainer dataset: each row its own example, labels = input ids."""

    def __init__(self, input_ids: torch.Tensor):
        self.input_ids = input_ids

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.input_ids[index], "labels": self.input_ids[index]}
