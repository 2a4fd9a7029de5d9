"""A tiny MiniCPM-V-2 / OmniLMM look-alike whose vision tower is held in a plain Python list.

Real transformers classes: the vision tower is a ``SiglipVisionModel`` (its first layer is the
``Conv2d`` patch embedding) with a timm-style ``forward_features``; the LLM is a
``LlamaForCausalLM``; a Linear projector maps image patches to LLM embeddings.

The trait behind the bug, borrowed from the same code family (OmniLMM, after LLaVA): the tower
is built and loaded on its own and stored as ``self.vision_tower = [tower]``. ``nn.Module`` only
registers modules assigned directly, so a list hides the tower from ``.to()``, ``.half()``,
``parameters()``, ``state_dict()``, peft and optimizers: moving the model moves everything else.
Weights are random (seeded); nothing is downloaded.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from torch import nn
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    PretrainedConfig,
    PreTrainedModel,
    SiglipVisionConfig,
    SiglipVisionModel,
)

from shared.checks import check_that
from shared.tiny_models import quiet_hf_logging, save_pretrained_to_temp

IMAGE_SIZE, PATCH_SIZE = 28, 7
IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE) ** 2  # one LLM position per image patch
TEXT_TOKENS, VOCAB = 8, 128
VISION_FOLDER = "vision_tower"  # the tower's own checkpoint, beside the composite's

quiet_hf_logging()


class TinyVisionTower(SiglipVisionModel):
    """A SigLIP ViT with the timm-style entry point the upstream code calls."""

    def forward_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self(pixel_values=pixel_values).last_hidden_state


class TinyOmniLMMConfig(PretrainedConfig):
    model_type = "tiny_omnilmm"

    def __init__(self, text_config=None, vision_hidden_size: int = 32, **kwargs):
        if not isinstance(text_config, LlamaConfig):
            text_config = LlamaConfig(**(text_config or {}))
        self.text_config = text_config
        self.vision_hidden_size = vision_hidden_size
        super().__init__(**kwargs)


class TinyOmniLMM(PreTrainedModel):
    config_class = TinyOmniLMMConfig
    base_model_prefix = "omnilmm"

    def __init__(self, config: TinyOmniLMMConfig):
        super().__init__(config)
        self.llm = LlamaForCausalLM(config.text_config)
        # Bias-free, as the upstream resampler's kv_proj, the module after the tower.
        self.projector = nn.Linear(
            config.vision_hidden_size, config.text_config.hidden_size, bias=False
        )
        self.vision_tower: list[TinyVisionTower] = []  # filled by attach_vision_tower
        self.post_init()

    def _init_weights(self, module):
        pass  # keep the seeded torch defaults: the checkpoint holds every weight anyway

    def attach_vision_tower(self, tower: TinyVisionTower) -> None:
        """Keep the tower in a list, as the upstream family does for a frozen tower.

        Not registered as a submodule: `.to()`, `.half()`, `parameters()` and peft skip it.
        """
        tower.requires_grad_(False)  # LoRA fine-tuning leaves the vision tower frozen
        self.vision_tower = [tower]

    @property
    def vpm(self) -> TinyVisionTower:
        return self.vision_tower[0]

    def get_vllm_embedding(self, batch: dict) -> torch.Tensor:
        """Projected image patches followed by the text embeddings: what the LLM consumes."""
        dtype = self.vpm.dtype
        # As upstream: `.type(dtype)` changes the dtype only; the batch keeps its device.
        patches = self.vpm.forward_features(batch["pixel_values"].type(dtype))
        image_embeds = self.projector(patches)
        text_embeds = self.llm.get_input_embeddings()(batch["input_ids"])
        return torch.cat([image_embeds, text_embeds], dim=1)

    def forward(self, pixel_values, input_ids, labels=None):
        embeds = self.get_vllm_embedding({"pixel_values": pixel_values, "input_ids": input_ids})
        if labels is not None:  # no loss on the image positions
            image_labels = labels.new_full((labels.shape[0], IMAGE_TOKENS), -100)
            labels = torch.cat([image_labels, labels], dim=1)
        return self.llm(inputs_embeds=embeds, labels=labels)


def save_tiny_checkpoint() -> Path:
    """Build the tiny model in float32 with fixed seeds; save the composite and the tower.

    The composite's state_dict cannot hold the list-held tower, so, as upstream builds the
    tower from its own weights, the tower is saved on its own in a sub-folder.
    """
    torch.manual_seed(0)
    tower = TinyVisionTower(
        SiglipVisionConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, vision_use_head=False,
        )
    )  # fmt: skip
    model = TinyOmniLMM(
        TinyOmniLMMConfig(
            text_config=dict(
                hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=64,
            ),
            vision_hidden_size=tower.config.hidden_size,
        )
    )  # fmt: skip
    folder = save_pretrained_to_temp(model)
    tower.save_pretrained(folder / VISION_FOLDER)
    return folder


def load_tiny_omnilmm(checkpoint: Path, dtype: torch.dtype) -> TinyOmniLMM:
    """Load the composite and its tower with the same dtype, then put the tower in the list.

    Spelled ``torch_dtype=``: every transformers of the case's range takes it (5.x still does);
    ``dtype=`` arrived in 4.56, and before that it is handed to the model's ``__init__``.
    """
    model = TinyOmniLMM.from_pretrained(checkpoint, torch_dtype=dtype)
    tower = TinyVisionTower.from_pretrained(checkpoint / VISION_FOLDER, torch_dtype=dtype)
    model.attach_vision_tower(tower)
    return model


def add_lora(model: TinyOmniLMM) -> PeftModel:
    """LoRA adapters on the LLM's attention projections, kept float32; every other weight frozen.

    peft >= 0.12 makes the adapters of a float16 model float32 itself (`autocast_adapter_dtype`);
    older peft made them float16, and AdamW on float16 weights (its eps 1e-8 rounds to 0 in
    float16) turns the loss into NaN from the second step. The cast below gives every peft
    the float32 adapters of today's default (a no-op from 0.12 on).
    """
    config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "v_proj"])
    with warnings.catch_warnings():  # peft probes an attribute transformers 5 has deprecated
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated")
        peft_model = get_peft_model(model, config)
    for name, parameter in peft_model.named_parameters():
        if "lora_" in name:
            parameter.data = parameter.data.float()
    return peft_model


def forward_parameters(model: nn.Module) -> Iterator[tuple[str, nn.Parameter]]:
    """Every parameter the forward uses, as (name, parameter).

    The registered ones, plus those of modules held in plain lists or tuples, which
    `named_parameters()` does not see (named like `vision_tower[0].embeddings...`).
    """
    yield from model.named_parameters()
    for owner_name, owner in model.named_modules():
        for attribute, value in vars(owner).items():
            if not isinstance(value, (list, tuple)):
                continue
            for index, item in enumerate(value):
                if isinstance(item, nn.Module):
                    prefix = f"{owner_name}.{attribute}[{index}]".lstrip(".")
                    for name, parameter in item.named_parameters():
                        yield f"{prefix}.{name}", parameter


def assert_placement(model: nn.Module, device: torch.device) -> None:
    """Fail before training unless every parameter the forward uses is on ``device``.

    The failure names where the stragglers live (grouped by the attribute that holds them).
    """
    device = torch.device(device)
    parameters = list(forward_parameters(model))
    misplaced = [
        (name, parameter.device)
        for name, parameter in parameters
        if parameter.device.type != device.type
        or (device.index is not None and parameter.device.index != device.index)
    ]
    if misplaced:
        holders = Counter(_holder(name) for name, _ in misplaced)
        where = ", ".join(f"{holder}: {count}" for holder, count in holders.items())
        first_name, first_device = misplaced[0]
        detail = (
            f"{len(misplaced)} of {len(parameters)} parameters the forward uses are not on "
            f"{device} ({where}), e.g. {first_name} on {first_device}"
        )
    else:
        detail = f"all {len(parameters)} parameters the forward uses are on {device}"
    check_that("placement before training", not misplaced, detail)


def _holder(name: str) -> str:
    """The list entry a hidden parameter lives in (`...vision_tower[0]`), else the name."""
    holder, found, _ = name.partition("].")
    return f"{holder}]" if found else name


def lora_training_steps(model: PeftModel, batch: dict, steps: int) -> list[float]:
    """A plain training loop on one batch; returns the loss of each step."""
    trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
    # No weight decay: a weight changes only where its gradient moves it.
    optimizer = torch.optim.AdamW(trainable, lr=1e-2, weight_decay=0.0)
    losses = []
    for _ in range(steps):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of every parameter the forward uses, the list-held tower's included."""
    return {name: parameter.detach().clone() for name, parameter in forward_parameters(model)}


def changed_parameters(model: nn.Module, before: dict[str, torch.Tensor]) -> set[str]:
    return {
        name
        for name, parameter in forward_parameters(model)
        if not torch.equal(parameter.detach(), before[name])
    }


def example_batch(device: torch.device, batch_size: int = 2) -> dict:
    """A preprocessed image batch (float32, as image processors return) and token ids."""
    generator = torch.Generator().manual_seed(1)
    pixel_values = torch.rand(batch_size, 3, IMAGE_SIZE, IMAGE_SIZE, generator=generator)
    input_ids = torch.randint(0, VOCAB, (batch_size, TEXT_TOKENS), generator=generator)
    return {
        "pixel_values": ((pixel_values - 0.5) / 0.5).to(device),
        "input_ids": input_ids.to(device),
        "labels": input_ids.to(device),
    }
