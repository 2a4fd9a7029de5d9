"""A tiny CogAgent look-alike: BEiT image encoder -> linear projector -> Llama language model.

Real transformers classes: ``BeitModel`` stands in for CogAgent's high-resolution cross-vision
encoder (an EVA2-CLIP ViT, which is BEiT-derived); ``LlamaForCausalLM`` for its Vicuna LLM.
What matters for the bug is the trait BEiT shares with EVA-CLIP: its patch embedding (a Conv2d
with bias) takes ``pixel_values`` in whatever dtype they come, without casting them to the
weights' dtype. Here the image features are projected and put in front of the text embeddings
(upstream feeds the high-resolution features through cross-attention); the bug fires in the
encoder's first layer, before that difference matters.
Weights are random (seeded); nothing is downloaded. Tokens are bytes (vocabulary of 128).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch import nn
from transformers import (
    BeitConfig,
    BeitModel,
    LlamaConfig,
    LlamaForCausalLM,
    PretrainedConfig,
    PreTrainedModel,
)

from shared.tiny_models import quiet_hf_logging, save_pretrained_to_temp, sub_config

IMAGE_SIZE, PATCH_SIZE = 32, 8  # 4 x 4 patches
VOCAB_SIZE = 128  # one token per ASCII byte

quiet_hf_logging()


class TinyCogAgentConfig(PretrainedConfig):
    model_type = "tiny_cogagent"

    def __init__(self, vision_config=None, text_config=None, **kwargs):
        self.vision_config = sub_config(BeitConfig, vision_config)
        self.text_config = sub_config(LlamaConfig, text_config)
        super().__init__(**kwargs)


class TinyCogAgent(PreTrainedModel):
    config_class = TinyCogAgentConfig
    base_model_prefix = "cogagent"

    def __init__(self, config: TinyCogAgentConfig):
        super().__init__(config)
        self.cross_vision = BeitModel(config.vision_config, add_pooling_layer=False)
        self.projector = nn.Linear(config.vision_config.hidden_size, config.text_config.hidden_size)
        self.llm = LlamaForCausalLM(config.text_config)
        self.post_init()

    def _init_weights(self, module):
        pass  # keep the torch defaults: rank 0's checkpoint overwrites every weight anyway

    def forward(self, pixel_values: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
        """Logits for [image tokens, question tokens]; the image is used as given (no cast).

        The logits come out of ``lm_head`` in the model's dtype, as SAT's model computes them:
        not through ``LlamaForCausalLM.forward``, which before transformers 4.46 upcast them to
        float32 whatever the model's dtype (the fixes check the dtype the flag sets).
        """
        patches = self.cross_vision(pixel_values=pixel_values).last_hidden_state
        image_embeds = self.projector(patches)
        text_embeds = self.llm.get_input_embeddings()(input_ids)
        embeds = torch.cat([image_embeds, text_embeds], dim=1)
        return self.llm.lm_head(self.llm.model(inputs_embeds=embeds).last_hidden_state)


def tiny_config() -> TinyCogAgentConfig:
    """The architecture every rank builds before rank 0's weights are broadcast into it."""
    return TinyCogAgentConfig(
        vision_config=dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, use_absolute_position_embeddings=True,
            drop_path_rate=0.0,
        ),
        text_config=dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=2, vocab_size=VOCAB_SIZE, max_position_embeddings=64,
        ),
    )  # fmt: skip


def save_tiny_checkpoint() -> Path:
    """Build the tiny model in float32 with a fixed seed and save it with save_pretrained."""
    torch.manual_seed(0)
    model = TinyCogAgent(tiny_config())
    with torch.no_grad():  # BEiT starts its position table and CLS token at zero: fill them
        for parameter in (
            model.cross_vision.embeddings.cls_token,
            model.cross_vision.embeddings.position_embeddings,
        ):
            parameter.normal_(std=0.02)
    return save_pretrained_to_temp(model)


def example_image() -> Image.Image:
    """A seeded RGB picture, as a user would hand the demo a file."""
    pixels = np.random.default_rng(1).integers(0, 256, (IMAGE_SIZE, IMAGE_SIZE, 3), np.uint8)
    return Image.fromarray(pixels)


def preprocess(image: Image.Image) -> torch.Tensor:
    """Resize, scale to [0, 1], normalise: float32 (1, 3, H, W), as image processors return."""
    array = np.asarray(image.convert("RGB").resize((IMAGE_SIZE, IMAGE_SIZE)), np.float32) / 255
    return torch.from_numpy((array - 0.5) / 0.5).permute(2, 0, 1).unsqueeze(0)


def encode_query(text: str) -> torch.Tensor:
    """Byte-level token ids (1, length): a stand-in tokenizer for the 128-token vocabulary."""
    return torch.tensor([list(text.encode("ascii"))])
