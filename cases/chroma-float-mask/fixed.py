"""Chroma, a short prompt padded to 512 tokens, FIXED: a bool mask passed with the embeddings."""

import torch
from tiny_chroma_float_mask import (
    NEGATIVE_PROMPT,
    PROMPT,
    UNPADDED,
    describe_mask,
    generate,
    tiny_chroma,
)

from shared.checks import compare_to_reference, pick_device

device = pick_device()
pipe = tiny_chroma().to(device)

# The root cause, visible before anything runs: the padding mask encode_prompt builds is float.
prompt_embeds, _, mask, negative_embeds, _, negative_mask = pipe.encode_prompt(
    PROMPT, NEGATIVE_PROMPT
)  # max_sequence_length=512, the pipeline's default
print("prompt_attention_mask:", describe_mask(mask))

reference = generate(pipe, max_sequence_length=UNPADDED)  # no padding: nothing to mask
image = generate(  # the fix: the embeddings with their masks made bool
    pipe,
    prompt_embeds=prompt_embeds,
    prompt_attention_mask=mask.bool(),
    negative_prompt_embeds=negative_embeds,
    negative_prompt_attention_mask=negative_mask.bool(),
)
compare_to_reference("image, prompts padded to 512 tokens", image, reference, dtype=torch.float32)
