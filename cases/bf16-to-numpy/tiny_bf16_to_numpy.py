"""The tiny models the variants share: a ViT image classifier and a DPT depth estimator built
from real transformers classes at 32x32 pixels, their image processors, one seeded image.
Nothing is downloaded."""

from __future__ import annotations

import numpy as np
from PIL import Image

from shared.tiny_models import quiet_hf_logging, tiny_seed

NUM_LABELS = 5
IMAGE_SIZE = 32


def tiny_image_classifier():
    """A float32 ViTForImageClassification (2 layers, hidden 32, 5 labels), as a checkpoint
    would load it."""
    from transformers import ViTConfig, ViTForImageClassification

    quiet_hf_logging()
    tiny_seed(0)
    config = ViTConfig(image_size=IMAGE_SIZE, patch_size=8, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=2, intermediate_size=64,
                       num_labels=NUM_LABELS)  # fmt: skip
    return ViTForImageClassification(config).eval()


def tiny_depth_estimator():
    """A float32 DPTForDepthEstimation (a 4-layer ViT backbone of hidden 32, its neck and head)."""
    from transformers import DPTConfig, DPTForDepthEstimation

    quiet_hf_logging()
    tiny_seed(0)
    config = DPTConfig(image_size=IMAGE_SIZE, patch_size=8, hidden_size=32, num_hidden_layers=4,
                       num_attention_heads=2, intermediate_size=64,
                       backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[8, 16, 32, 32],
                       reassemble_factors=[4, 2, 1, 0.5], fusion_hidden_size=16)  # fmt: skip
    return DPTForDepthEstimation(config).eval()


def tiny_vit_processor():
    from transformers import ViTImageProcessor

    return ViTImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})


def tiny_dpt_processor():
    from transformers import DPTImageProcessor

    return DPTImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})


def example_image() -> Image.Image:
    """A 48x40 RGB photo stand-in (seeded noise): the processor resizes it to 32x32."""
    pixels = np.random.default_rng(1).random((40, 48, 3))
    return Image.fromarray((pixels * 255).astype("uint8"))
