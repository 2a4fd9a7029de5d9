"""Chroma, a short prompt padded to 512 tokens, FIXED: a hook makes the transformer's mask bool."""

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


def bool_attention_mask(transformer, args, kwargs):  # the fix, after every cast of the pipeline
    kwargs["attention_mask"] = kwargs["attention_mask"].bool()
    return args, kwargs


pipe.transformer.register_forward_pre_hook(bool_attention_mask, with_kwargs=True)

reference = generate(pipe, max_sequence_length=UNPADDED)  # no padding: nothing to mask
image = generate(pipe)  # the same prompts padded to 512 tokens, as pipe(prompt) does
compare_to_reference("image, prompts padded to 512 tokens", image, reference, dtype=torch.float32)
