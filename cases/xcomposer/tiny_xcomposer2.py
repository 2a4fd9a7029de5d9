"""A tiny InternLM-XComposer2-VL look-alike: CLIP vision tower -> mlp2x_gelu projector -> LLM.

Real transformers classes for the tower (``CLIPVisionModel``), the LLM (``LlamaForCausalLM``,
standing in for InternLM2, a Llama-style decoder) and the image processor
(``CLIPImageProcessorPil``, on transformers 4.x ``CLIPImageProcessor``: resize, to-tensor,
normalise). The traits that cause the bug:
- the vision-tower wrapper runs the tower in its own dtype and hands the features back **in
  the image's dtype** (as upstream's wrapper does);
- the image processor always returns float32 pixel values;
- the projector (``mlp2x_gelu``: Linear-GELU-Linear, bias=True) is loaded in the model's
  dtype, so with ``torch_dtype=torch.float16`` its first Linear gets a float32 input.
Weights are random (seeded); nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers
from packaging.version import Version
from PIL import Image
from torch import nn
from transformers import (
    CLIPVisionConfig,
    CLIPVisionModel,
    LlamaConfig,
    LlamaForCausalLM,
    PretrainedConfig,
    PreTrainedModel,
)
from transformers.image_utils import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, PILImageResampling

try:
    from transformers import CLIPImageProcessorPil as CLIPImageProcessor
except ImportError:  # transformers 4.x: the one CLIP processor works on PIL/numpy already
    from transformers import CLIPImageProcessor

from shared.tiny_models import quiet_hf_logging, save_pretrained_to_temp, sub_config

IMAGE_SIZE, PATCH_SIZE = 28, 7  # 4 x 4 patches
TEXT_TOKENS, VOCAB_SIZE = 8, 128

quiet_hf_logging()


class TinyXComposer2Config(PretrainedConfig):
    model_type = "tiny_xcomposer2"

    def __init__(self, vision_config=None, text_config=None, **kwargs):
        self.vision_config = sub_config(CLIPVisionConfig, vision_config)
        self.text_config = sub_config(LlamaConfig, text_config)
        super().__init__(**kwargs)


class CLIPVisionTower(nn.Module):
    """Runs the CLIP tower in its own dtype; returns patch features in the image's dtype."""

    def __init__(self, config: CLIPVisionConfig):
        super().__init__()
        self.vision_tower = CLIPVisionModel(config)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        tower = self.vision_tower
        tower_input = images.to(device=tower.device, dtype=tower.dtype)  # the tower's own dtype
        outputs = tower(tower_input, output_hidden_states=True)
        patch_features = outputs.hidden_states[-1][:, 1:]  # the class token dropped
        return patch_features.to(images.dtype)  # back to the image's dtype (as upstream)


def mlp2x_gelu(in_features: int, out_features: int) -> nn.Sequential:
    """The projector type `mlp2x_gelu`: Linear-GELU-Linear, with biases."""
    return nn.Sequential(
        nn.Linear(in_features, out_features), nn.GELU(), nn.Linear(out_features, out_features)
    )


class TinyXComposer2(PreTrainedModel):
    config_class = TinyXComposer2Config
    base_model_prefix = "xcomposer2"

    def __init__(self, config: TinyXComposer2Config):
        super().__init__(config)
        self.vit = CLIPVisionTower(config.vision_config)
        self.vision_proj = mlp2x_gelu(
            config.vision_config.hidden_size, config.text_config.hidden_size
        )
        self.llm = LlamaForCausalLM(config.text_config)
        self.post_init()

    def _init_weights(self, module):
        pass  # keep the seeded torch defaults: the checkpoint holds every weight anyway

    def img2emb(self, image: torch.Tensor) -> torch.Tensor:
        """Image tokens for the LLM: the projected vision features (upstream's call chain)."""
        return self.vision_proj(self.vit(image.to(self.device)))

    def forward(self, pixel_values: torch.Tensor, input_ids: torch.Tensor):
        """The image tokens followed by the text tokens, through the LLM (one chat step)."""
        image_embeds = self.img2emb(pixel_values)
        text_embeds = self.llm.get_input_embeddings()(input_ids)
        return self.llm(inputs_embeds=torch.cat([image_embeds, text_embeds], dim=1))


def save_tiny_checkpoint() -> Path:
    """Build the tiny model in float32 with fixed seeds and save it with save_pretrained."""
    torch.manual_seed(0)
    config = TinyXComposer2Config(
        vision_config=dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            image_size=IMAGE_SIZE, patch_size=PATCH_SIZE,
        ),
        text_config=dict(
            hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=2, vocab_size=VOCAB_SIZE, max_position_embeddings=64,
        ),
    )  # fmt: skip
    return save_pretrained_to_temp(TinyXComposer2(config))


def logits_dtype(model_dtype: torch.dtype) -> torch.dtype:
    """The dtype of the LLM's logits: the model's from transformers 4.46, before always float32
    (LlamaForCausalLM upcast them by design; not a sign of an upcast model)."""
    if Version(transformers.__version__) < Version("4.46"):
        return torch.float32
    return model_dtype


def image_processor() -> CLIPImageProcessor:
    """Resize (bicubic) -> to-tensor (x/255) -> CLIP normalise: upstream's vis_processor steps.

    The picture is square, so resizing its shortest edge (the one resize transformers 4.x CLIP
    processors take) is upstream's square resize, and the centre crop keeps all of it.
    """
    return CLIPImageProcessor(
        do_resize=True,
        size={"shortest_edge": IMAGE_SIZE},
        resample=PILImageResampling.BICUBIC,
        do_center_crop=True,
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        do_rescale=True,
        do_normalize=True,
        image_mean=OPENAI_CLIP_MEAN,
        image_std=OPENAI_CLIP_STD,
    )


def example_image() -> Image.Image:
    """A square RGB picture made in code (a gradient with a square), not the model's size."""
    ys, xs = np.mgrid[0:60, 0:60]
    pixels = np.stack([xs * 4, ys * 5, (xs + ys) * 2], axis=-1).astype(np.uint8)
    pixels[10:30, 20:40] = (250, 30, 90)
    return Image.fromarray(pixels, mode="RGB")


def example_input_ids(device: torch.device) -> torch.Tensor:
    """The text tokens of the query (random ids: no tokenizer needed for the bug)."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, VOCAB_SIZE, (1, TEXT_TOKENS), generator=generator).to(device)
