"""A tiny MiniCPM-V-2 look-alike: SigLIP vision tower -> resampler -> Llama language model.

Real transformers classes for the tower (``SiglipVisionModel``; ``CLIPVisionModel`` on
transformers < 4.37, which has no SigLIP) and the LLM
(``LlamaForCausalLM``); the resampler is written here with the traits that cause the bug:
- its fixed 2-D sin/cos position table is an ``nn.Parameter`` created with an explicit
  ``.float()``; ``from_pretrained(..., dtype=torch.bfloat16)`` leaves such a parameter float32;
- the key-side copy of the table is cast to the input dtype, the query-side one is not;
- the attention is a sequence-first ``nn.MultiheadAttention`` with bias, so a float32 query
  meets bfloat16 in-projection weights inside ``F.multi_head_attention_forward``.
Weights are random (seeded); nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM, PretrainedConfig, PreTrainedModel

try:
    from transformers import SiglipVisionConfig as VisionConfig
    from transformers import SiglipVisionModel as VisionModel
except ImportError:  # SigLIP arrived in transformers 4.37: on older ones a CLIP tower stands in
    from transformers import CLIPVisionConfig as VisionConfig
    from transformers import CLIPVisionModel as VisionModel

from shared.tiny_models import quiet_hf_logging, save_pretrained_to_temp, sub_config

IMAGE_SIZE, PATCH_SIZE = 28, 7
GRID = IMAGE_SIZE // PATCH_SIZE  # 4 x 4 patches, and as many resampler queries
TEXT_TOKENS = 8
# The fixes' bf16 embedding against float32, through the vision tower and the resampler: the
# worst element is off by 0.03 on torch 2.13 but by 0.09-0.105 on torch 2.0.1, whose CPU
# bfloat16 kernels round more (output scale 3.3). A wrong fix is off by the scale itself.
EMBEDDING_ATOL = 0.15

quiet_hf_logging()


class TinyMiniCPMVConfig(PretrainedConfig):
    model_type = "tiny_minicpmv"

    def __init__(self, vision_config=None, text_config=None, **kwargs):
        self.vision_config = sub_config(VisionConfig, vision_config)
        self.text_config = sub_config(LlamaConfig, text_config)
        super().__init__(**kwargs)


def sincos_table_2d(dim: int, grid: int) -> torch.Tensor:
    """Fixed 2-D sin/cos position table, (grid*grid, dim): half the channels per axis."""
    ys, xs = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    quarter = dim // 4
    frequencies = 1.0 / 10000 ** (torch.arange(quarter, dtype=torch.float64) / quarter)
    parts = []
    for positions in (ys.flatten(), xs.flatten()):
        angles = positions[:, None].double() * frequencies[None, :]
        parts += [angles.sin(), angles.cos()]
    return torch.cat(parts, dim=1)


class Resampler(nn.Module):
    """Cross-attention of learned queries over the image patches (one query per grid cell)."""

    def __init__(self, embed_dim: int, kv_dim: int, num_heads: int, grid: int):
        super().__init__()
        self.query = nn.Parameter(torch.randn(grid * grid, embed_dim) * 0.02)
        self.kv_proj = nn.Linear(kv_dim, embed_dim, bias=False)
        self.attn = nn.MultiheadAttention(embed_dim, num_heads)  # sequence-first, bias=True
        self.ln_q = nn.LayerNorm(embed_dim)
        self.ln_kv = nn.LayerNorm(embed_dim)
        self.ln_post = nn.LayerNorm(embed_dim)
        self.proj = nn.Parameter(embed_dim**-0.5 * torch.randn(embed_dim, embed_dim))
        # The trait behind the bug: a fixed table, explicitly float32, stored as a Parameter.
        self.pos_embed = nn.Parameter(sincos_table_2d(embed_dim, grid).float(), requires_grad=False)

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        keys_values = self.ln_kv(self.kv_proj(patches)).permute(1, 0, 2)  # (patches, batch, dim)
        batch = keys_values.shape[1]
        query = self.ln_q(self.query).unsqueeze(1).repeat(1, batch, 1)
        key_pos = self.pos_embed.to(keys_values.dtype).unsqueeze(1)  # key side: cast
        out = self.attn(
            query + self.pos_embed.unsqueeze(1),  # query side: NOT cast -> float32 query
            keys_values + key_pos,
            keys_values,
        )[0]
        return self.ln_post(out.permute(1, 0, 2)) @ self.proj


class TinyMiniCPMV(PreTrainedModel):
    config_class = TinyMiniCPMVConfig
    base_model_prefix = "minicpmv"

    def __init__(self, config: TinyMiniCPMVConfig):
        super().__init__(config)
        self.vpm = VisionModel(config.vision_config)
        self.llm = LlamaForCausalLM(config.text_config)
        self.resampler = Resampler(
            embed_dim=config.text_config.hidden_size,
            kv_dim=config.vision_config.hidden_size,
            num_heads=2,
            grid=GRID,
        )
        self.post_init()

    def _init_weights(self, module):
        pass  # keep the seeded torch defaults: the checkpoint holds every weight anyway

    def get_vllm_embedding(self, batch: dict) -> torch.Tensor:
        """Image queries followed by the text embeddings: what the LLM consumes."""
        pixel_values = batch["pixel_values"].type(self.vpm.dtype)  # as upstream: cast to vpm
        # The patch tokens (a CLIP tower puts a class token first; SigLIP has none).
        patches = self.vpm(pixel_values=pixel_values).last_hidden_state[:, -GRID * GRID :]
        image_embeds = self.resampler(patches)
        text_embeds = self.llm.get_input_embeddings()(batch["input_ids"])
        return torch.cat([image_embeds, text_embeds], dim=1)

    def forward(self, pixel_values, input_ids, labels=None):
        embeds = self.get_vllm_embedding({"pixel_values": pixel_values, "input_ids": input_ids})
        if labels is not None:
            labels = labels_with_image_positions(labels)
        return self.llm(inputs_embeds=embeds, labels=labels)


def labels_with_image_positions(labels: torch.Tensor) -> torch.Tensor:
    """Prepend 'ignore' labels for the image queries: no loss on image positions."""
    image_labels = labels.new_full((labels.shape[0], GRID * GRID), -100)
    return torch.cat([image_labels, labels], dim=1)


def save_tiny_checkpoint() -> Path:
    """Build the tiny model in float32 with fixed seeds and save it with save_pretrained."""
    torch.manual_seed(0)
    config = TinyMiniCPMVConfig(
        vision_config=dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            image_size=IMAGE_SIZE, patch_size=PATCH_SIZE,
        ),
        text_config=dict(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=2, vocab_size=128, max_position_embeddings=64,
        ),
    )  # fmt: skip
    return save_pretrained_to_temp(TinyMiniCPMV(config))


def example_batch(device: torch.device, batch_size: int = 2) -> dict:
    """A preprocessed image batch (float32, as image processors return) and token ids."""
    generator = torch.Generator().manual_seed(1)
    pixel_values = torch.rand(batch_size, 3, IMAGE_SIZE, IMAGE_SIZE, generator=generator)
    input_ids = torch.randint(0, 128, (batch_size, TEXT_TOKENS), generator=generator)
    return {
        "pixel_values": ((pixel_values - 0.5) / 0.5).to(device),
        "input_ids": input_ids.to(device),
        "labels": input_ids.to(device),
    }
