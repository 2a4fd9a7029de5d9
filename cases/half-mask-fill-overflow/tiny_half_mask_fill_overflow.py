"""What the half-mask-fill-overflow variants share: a tiny ``DebertaForMaskedLM`` (real class,
relative attention with c2p and p2c as deberta-base has it, seeded with ``tiny_seed``, nothing
downloaded) and a batch of two texts, the shorter one padded, so DeBERTa's attention fills the
scores of the padding keys with a large negative value."""

from __future__ import annotations

import torch

from shared.checks import record_device
from shared.tiny_models import quiet_hf_logging, tiny_seed

quiet_hf_logging()

SEQUENCE, PADDING, VOCAB = 8, 3, 64  # the second text is 5 tokens, padded to 8


def cpu() -> torch.device:
    """The CPU: CPU autocast fills the same float16 scores as CUDA autocast (Trainer fp16=True),
    and torch raises the same overflow check on both."""
    return record_device(torch.device("cpu"), "CPU autocast shows CUDA autocast's overflow")


def tiny_deberta():
    """A 2-layer DeBERTa (hidden 32, 2 heads) with disentangled relative attention."""
    from transformers import DebertaConfig, DebertaForMaskedLM

    tiny_seed(0)
    config = DebertaConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, relative_attention=True,
        pos_att_type=["c2p", "p2c"],
    )  # fmt: skip
    return DebertaForMaskedLM(config).eval()


def padded_batch() -> dict[str, torch.Tensor]:
    """input_ids and attention_mask for two texts, the second padded (0 = padding)."""
    tiny_seed(1)
    input_ids = torch.randint(3, VOCAB, (2, SEQUENCE))
    attention_mask = torch.ones(2, SEQUENCE, dtype=torch.long)
    attention_mask[1, -PADDING:] = 0
    input_ids[1, -PADDING:] = 0  # the pad token
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def real_token_logits(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The masked-LM logits at the texts' real tokens (padding rows skipped)."""
    with torch.no_grad():
        logits = model(**batch).logits
    return logits[batch["attention_mask"].bool()]
