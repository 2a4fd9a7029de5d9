"""What the cpu-autocast-mha-mask variants share: a tiny ``LlamaForCausalLM`` (real class, seeded
with ``tiny_seed``, nothing downloaded) and a batch of two texts, the shorter one right-padded as
a tokenizer pads a training or scoring batch, so the model builds a float padding mask for
attention. Right, not left: with left padding the first rows of the padded text see no key at
all, and on torch 2.2 to 2.4 (the stacks of 2024-04 to 2024-10) bfloat16 autocast makes such
rows NaN (the float32 minimum rounds to -inf in bfloat16): the autocast-left-padding-nan case."""

from __future__ import annotations

import torch

from shared.checks import record_device
from shared.tiny_models import quiet_hf_logging, tiny_llama_config, tiny_seed

quiet_hf_logging()

SEQUENCE, PADDING = 8, 3  # the second text is 5 tokens, right-padded to 8


def cpu() -> torch.device:
    """The CPU, on any machine: CUDA autocast always cast SDPA's inputs, CPU autocast did not."""
    return record_device(torch.device("cpu"), "the failure is CPU autocast's")


def tiny_llama(attn_implementation: str):
    """A 2-layer Llama (hidden 64, 4 heads) with the attention ``attn_implementation`` names."""
    from transformers import LlamaForCausalLM

    tiny_seed(0)
    config = tiny_llama_config()
    config._attn_implementation = attn_implementation  # from_pretrained(attn_implementation=...)
    return LlamaForCausalLM(config).eval()


def padded_batch() -> dict[str, torch.Tensor]:
    """input_ids and attention_mask for two texts, the second right-padded (0 = padding)."""
    tiny_seed(1)
    input_ids = torch.randint(3, 64, (2, SEQUENCE))
    attention_mask = torch.ones(2, SEQUENCE, dtype=torch.long)
    attention_mask[1, -PADDING:] = 0
    input_ids[1, -PADDING:] = 0  # the pad token
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def real_token_logits(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The output head's logits at the texts' real tokens (what a loss or a score reads; padding
    rows are skipped), in the dtype the head ran in (some releases upcast ``.logits``)."""
    with torch.no_grad():
        hidden = model.model(**batch).last_hidden_state
        logits = model.lm_head(hidden)
    return logits[batch["attention_mask"].bool()]


WIDTH, HEADS, CONTEXT = 64, 4, 8  # OpenCLIP's text tower, shrunk: width 512, 8 heads, 77 tokens


def tiny_text_attention() -> tuple[torch.nn.Embedding, torch.nn.MultiheadAttention]:
    """OpenCLIP's text tower as #99012 ran it, cut to its first attention: token embeddings and
    a sequence-first ``nn.MultiheadAttention`` (``batch_first=False``, as OpenCLIP built it)."""
    tiny_seed(0)
    embedding = torch.nn.Embedding(64, WIDTH)
    attention = torch.nn.MultiheadAttention(WIDTH, HEADS)
    return embedding.eval(), attention.eval()


def causal_float_mask() -> torch.Tensor:
    """OpenCLIP's ``build_attention_mask``: an additive float32 mask, -inf above the diagonal."""
    return torch.empty(CONTEXT, CONTEXT).fill_(float("-inf")).triu_(1)


def text_tokens() -> torch.Tensor:
    """Two texts of CONTEXT tokens, sequence first: (CONTEXT, 2)."""
    tiny_seed(1)
    return torch.randint(3, 64, (CONTEXT, 2))


def attend(embedding, attention, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The text tower's attention call: self-attention without weights (the SDPA path)."""
    with torch.no_grad():
        x = embedding(tokens)  # float32: autocast leaves embeddings alone
        return attention(x, x, x, attn_mask=mask, need_weights=False)[0]
