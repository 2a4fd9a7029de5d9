"""What the bf16-unsupported-setup variants share: a tiny Llama, one training example, a record
of the dtype each linear layer computed in, and the float32 forward of the training step the
fixes are checked against.

Real classes, tiny and seeded (``tiny_seed``); nothing is downloaded.
"""

from __future__ import annotations

import torch
from transformers import LlamaForCausalLM

from shared.checks import (  # linear_outputs: its scripts take it from here
    LinearOutputs,
    check_that,
    compare_to_reference,
    linear_outputs,  # noqa: F401
)
from shared.tiny_models import quiet_hf_logging, tiny_llama_config, tiny_seed

quiet_hf_logging()


def tiny_model() -> LlamaForCausalLM:
    """A float32 Llama (2 layers, hidden 64), as a fine-tuning script loads it."""
    tiny_seed(0)
    return LlamaForCausalLM(tiny_llama_config())


def example_input_ids() -> torch.Tensor:
    """One sequence of 16 token ids, as a tokenizer gives it: the step's whole batch."""
    return torch.randint(0, 64, (1, 16), generator=torch.Generator().manual_seed(1))


def labels_of(input_ids: torch.Tensor) -> torch.Tensor:
    """The ids as labels, the first position masked (-100): no token predicts it, so every
    Trainer release divides the loss by the same count (4.51 and 4.53 counted the unshifted
    labels: 16 here for 15 predictions, a loss 15/16 of the model's)."""
    labels = input_ids.clone()
    labels[..., 0] = -100
    return labels


class TokenDataset(torch.utils.data.Dataset):
    """Token ids as a Trainer dataset: each row its own example, with its labels."""

    def __init__(self, input_ids: torch.Tensor):
        self.input_ids, self.labels = input_ids, labels_of(input_ids)

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.input_ids[index], "labels": self.labels[index]}


def float32_step(input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference: the same seeded model's forward of the step (its update comes after it)
    in float32, outside any Trainer (on the 2025 stacks a second Trainer in one process ran
    under the first one's bfloat16 autocast); its logits and loss."""
    with torch.no_grad():
        output = tiny_model()(input_ids, labels=labels_of(input_ids))
    return output.logits, output.loss


def check_against_float32(seen: LinearOutputs, loss: float, input_ids: torch.Tensor, dtype) -> None:
    """A fixed step is right: its linear layers ran in ``dtype``, and its first logits and loss
    match the float32 forward's (the loss is float32 either way: from bfloat16 logits, within
    their tolerance)."""
    check_that("precision", seen.dtypes == {dtype}, f"the linear layers ran in {seen.names()}")
    reference_logits, reference_loss = float32_step(input_ids)
    compare_to_reference("logits", seen.first_logits, reference_logits, dtype=dtype)
    tol = 5e-2 if dtype == torch.bfloat16 else None
    compare_to_reference(
        "loss", torch.tensor(loss), reference_loss, dtype=torch.float32, atol=tol, rtol=tol
    )
