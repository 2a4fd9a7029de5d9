"""What the index-put-embed-merge variants share: two tiny vision-language models whose forward
merges the image features into the text embeddings by masked assignment (``inputs_embeds[mask]
= image_features``), and the mixed-precision setups that give the two sides different dtypes.

Real classes, tiny and seeded (``tiny_seed``); nothing is downloaded:
- ``Kosmos2ForConditionalGeneration`` (a CLIP-like vision tower, a latent-query projection
  ending in a Linear, a text decoder): its ``forward_embedding`` merges ``image_embeds``;
- ``Idefics2ForConditionalGeneration`` (a SigLIP-like vision tower, a perceiver resampler
  ending in an RMSNorm, a Mistral decoder): its ``inputs_merger`` merges them.

Each variant checks the output head's own output (its dtype is the one the model ran in, whatever
the library upcasts afterwards) against the float32 model on the same inputs.
"""

from __future__ import annotations

import torch

from shared.tiny_models import quiet_hf_logging, tiny_seed

quiet_hf_logging()

IMAGE_SIZE, PATCH_SIZE = 16, 8
IMAGE_TOKENS = 4  # both models: image features per image, each merged at one placeholder token
VOCAB = 64
IMAGE_TOKEN_ID = 60  # Idefics2's <image> placeholder


def tiny_kosmos2():
    """A ``Kosmos2ForConditionalGeneration`` (transformers >= 4.35)."""
    from transformers import Kosmos2Config, Kosmos2ForConditionalGeneration

    tiny_seed(0)
    config = Kosmos2Config(
        text_config={
            "vocab_size": VOCAB,
            "embed_dim": 32,
            "layers": 1,
            "ffn_dim": 64,
            "attention_heads": 2,
            "max_position_embeddings": 64,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": IMAGE_SIZE,
            "patch_size": PATCH_SIZE,
        },
        latent_query_num=IMAGE_TOKENS,
    )
    return Kosmos2ForConditionalGeneration(config).eval()


def kosmos2_inputs(device: torch.device) -> dict[str, torch.Tensor]:
    """What Kosmos2's processor returns for one image and a prompt: the image's placeholder
    tokens flagged in ``image_embeds_position_mask``."""
    input_ids = torch.tensor([[0, 2, 3, 4, 5, 6, 7, 8, 9, 10]])
    position_mask = torch.zeros_like(input_ids)
    position_mask[:, 2 : 2 + IMAGE_TOKENS] = 1
    inputs = {
        "pixel_values": _image(),
        "input_ids": input_ids,
        "attention_mask": torch.ones_like(input_ids),
        "image_embeds_position_mask": position_mask,
    }
    return {name: tensor.to(device) for name, tensor in inputs.items()}


def tiny_idefics2():
    """An ``Idefics2ForConditionalGeneration`` (transformers >= 4.40: imported here, so that the
    Kosmos-2 variants run on older releases)."""
    from transformers import Idefics2Config, Idefics2ForConditionalGeneration

    tiny_seed(0)
    config = Idefics2Config(
        image_token_id=IMAGE_TOKEN_ID,
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": IMAGE_SIZE,
            "patch_size": PATCH_SIZE,
        },
        perceiver_config={
            "resampler_n_latents": IMAGE_TOKENS,
            "resampler_depth": 1,
            "resampler_n_heads": 2,
            "resampler_head_dim": 8,
            "num_key_value_heads": 1,
        },
        text_config={
            "vocab_size": VOCAB,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "pad_token_id": 0,
        },
    )
    return Idefics2ForConditionalGeneration(config).eval()


def idefics2_inputs(device: torch.device) -> dict[str, torch.Tensor]:
    """What Idefics2's processor returns for one image and a prompt: one <image> token per
    perceiver latent, the image batch as (batch, images, channels, height, width)."""
    input_ids = torch.tensor([[1, 5, *[IMAGE_TOKEN_ID] * IMAGE_TOKENS, 7, 9, 11]])
    inputs = {
        "pixel_values": _image().unsqueeze(1),
        "input_ids": input_ids,
        "attention_mask": torch.ones_like(input_ids),
    }
    return {name: tensor.to(device) for name, tensor in inputs.items()}


def upcast_norms(model: torch.nn.Module) -> None:
    """LLaMA-Factory's ``upcast_layernorm``: every 1-D parameter of a norm layer to float32."""
    for name, param in model.named_parameters():
        if param.ndim == 1 and ("norm" in name or "ln" in name):
            param.data = param.data.to(torch.float32)


def head_output(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The output head's own output (the logits before any upcast the library adds)."""
    seen: dict[str, torch.Tensor] = {}
    hook = model.get_output_embeddings().register_forward_hook(
        lambda module, args, output: seen.setdefault("logits", output)
    )
    try:
        with torch.no_grad():
            model(**inputs)
    finally:
        hook.remove()
    return seen["logits"]


def _image() -> torch.Tensor:
    """One normalised RGB image, as an image processor returns it (float32)."""
    return torch.randn(1, 3, IMAGE_SIZE, IMAGE_SIZE, generator=torch.Generator().manual_seed(1))
