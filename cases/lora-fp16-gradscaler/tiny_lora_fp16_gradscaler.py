"""What the lora-fp16-gradscaler variants share: two tiny float32 models, a training batch each.

Real classes, tiny and randomly initialised (seeded); nothing is downloaded:
- ``LlamaForCausalLM`` (2 layers, hidden 32) with a batch of token ids that are also the labels;
- ``UNet2DConditionModel`` (two blocks, cross-attention width 8) with the tensors one step of
  ``train_text_to_image_lora.py`` feeds it: noisy latents, timesteps, text states, the noise.
The LoRA configurations follow the upstream setups: q/v projections for the Llama (as in the
peft reports), the attention projections with Gaussian init for the UNet (diffusers' example).
"""

from __future__ import annotations

import torch
from peft import LoraConfig
from transformers import LlamaConfig, LlamaForCausalLM

from shared.tiny_models import quiet_hf_logging

quiet_hf_logging()

VOCAB, BATCH, TOKENS = 64, 2, 8
LATENT_CHANNELS, LATENT_SIZE, TEXT_TOKENS, TEXT_DIM = 4, 8, 4, 8


def build_llama() -> LlamaForCausalLM:
    """A tiny Llama in float32, fixed seed."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(config).eval()  # eval: no dropout, the reference step is comparable


def llama_lora_config() -> LoraConfig:
    """LoRA on the attention's q and v projections, as the upstream reports configure it."""
    return LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")


def llama_batch(device: torch.device) -> torch.Tensor:
    """Token ids, used as the labels too (causal LM loss)."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, VOCAB, (BATCH, TOKENS), generator=generator).to(device)


def build_unet():
    """A tiny Stable-Diffusion-style UNet in float32, fixed seed."""
    from diffusers import UNet2DConditionModel  # here: the peft variants do not need diffusers

    torch.manual_seed(0)
    return UNet2DConditionModel(
        sample_size=LATENT_SIZE,
        in_channels=LATENT_CHANNELS,
        out_channels=LATENT_CHANNELS,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        block_out_channels=(8, 16),
        layers_per_block=1,
        norm_num_groups=4,
        cross_attention_dim=TEXT_DIM,
        attention_head_dim=4,
    ).eval()


def unet_lora_config() -> LoraConfig:
    """train_text_to_image_lora.py's adapter: the attention projections, Gaussian init."""
    return LoraConfig(
        r=4,
        lora_alpha=4,
        init_lora_weights="gaussian",
        target_modules=["to_k", "to_q", "to_v", "to_out.0"],
    )


def unet_batch(device: torch.device, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """One training step's tensors; the model inputs in ``dtype`` (the script's weight_dtype)."""
    generator = torch.Generator().manual_seed(1)
    shape = (BATCH, LATENT_CHANNELS, LATENT_SIZE, LATENT_SIZE)
    noise = torch.randn(shape, generator=generator)
    latents = torch.randn(shape, generator=generator)
    text_states = torch.randn(BATCH, TEXT_TOKENS, TEXT_DIM, generator=generator)
    return {
        "noisy_latents": (0.8 * latents + 0.6 * noise).to(device, dtype),
        "timesteps": torch.tensor([100, 700]).to(device),
        "encoder_hidden_states": text_states.to(device, dtype),
        "target": noise.to(device),  # epsilon prediction: the loss is taken in float32
    }


def trainable(model: torch.nn.Module) -> dict[str, torch.nn.Parameter]:
    """The parameters the optimizer gets: the LoRA weights (everything else is frozen)."""
    return {name: p for name, p in model.named_parameters() if p.requires_grad}
