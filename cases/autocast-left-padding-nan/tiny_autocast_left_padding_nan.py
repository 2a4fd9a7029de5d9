"""What the autocast-left-padding-nan variants share: a tiny ``LlamaForCausalLM`` (real class,
seeded with ``tiny_seed``, nothing downloaded) and a batch of two texts, the shorter one
left-padded as a tokenizer pads a batch for generation, so the first rows of that text see no
real key at all.

Its one arbitrary scale, ``weight_scale``: the std of the weights (``initializer_range``), 0.02 as
every LLM config ships it and about what trained 7B checkpoints hold, up to 0.05 for smaller,
longer-trained models. The NaN does not depend on it (a row that sees only ``-inf`` is NaN at any
scale); the perturbation tests check that it does not."""

from __future__ import annotations

import torch

from shared.checks import record_device
from shared.tiny_models import knob, quiet_hf_logging, tiny_llama_config, tiny_seed

quiet_hf_logging()

SEQUENCE, PADDING = 8, 3  # the second text is 5 tokens, left-padded to 8


def cpu() -> torch.device:
    """The CPU, on any machine: the mask is cast by CPU autocast, and transformers unmasked the
    rows that see nothing only on CUDA."""
    return record_device(torch.device("cpu"), "the failure is CPU autocast's")


def tiny_llama(attn_implementation: str):
    """A 2-layer Llama (hidden 64, 4 heads) with the attention ``attn_implementation`` names."""
    from transformers import LlamaForCausalLM

    tiny_seed(0)
    config = tiny_llama_config(initializer_range=knob("weight_scale", 0.02, (0.02, 0.05)))
    config._attn_implementation = attn_implementation  # from_pretrained(attn_implementation=...)
    return LlamaForCausalLM(config).eval()


def left_padded_batch() -> dict[str, torch.Tensor]:
    """input_ids and attention_mask for two texts, the second left-padded (0 = padding)."""
    tiny_seed(1)
    input_ids = torch.randint(3, 64, (2, SEQUENCE))
    attention_mask = torch.ones(2, SEQUENCE, dtype=torch.long)
    attention_mask[1, :PADDING] = 0
    input_ids[1, :PADDING] = 0  # the pad token
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def real_token_logits(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The output head's logits at the texts' real tokens (padding rows skipped), in the dtype
    the head ran in (some releases upcast ``.logits``): the padded text's come last."""
    with torch.no_grad():
        hidden = model.model(**batch).last_hidden_state
        logits = model.lm_head(hidden)
    return logits[batch["attention_mask"].bool()]
