"""A tiny real Llama (LlamaForCausalLM, 1 layer, hidden 32), a fixed batch and a training loop.

What decides whether AdamW's update survives bfloat16 is the ratio update / weight: Adam's
step is about ``lr`` per element, and bfloat16 keeps 8 significant bits, so an update smaller
than half a unit in the last place (between 2**-9 and 2**-8 of ``|w|``) rounds back to the old
weight. Both sides of that ratio are knobs over their realistic ranges:

- ``learning_rate``: full-parameter fine-tuning of an LLM with AdamW (SFT recipes use
  5e-6 .. 3e-5; 1e-5 is the common default);
- ``weight_scale``: the std of the projection weights (``initializer_range``): 0.02 is the init
  every LLM config ships and about what trained 7B checkpoints hold; up to 0.05 for smaller,
  longer-trained models.

Training runs as many steps as float32 training needs for its updates to add up to 1 % of the
weights' std (``training_steps``): about one bfloat16 rounding step of a typical weight, 20 steps
at the defaults. A fixed count judged Kahan summation, whose remainders wait for the rounding
step, before they were due where lr / std is small.

Random seeded float32 weights, saved with ``save_pretrained``; nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from shared.tiny_models import knob, quiet_hf_logging, save_pretrained_to_temp, tiny_seed

HORIZON = 0.01  # float32 training's summed update, as a share of the weights' std
VOCAB = 128

quiet_hf_logging()


def learning_rate() -> float:
    return knob("learning_rate", 1e-5, (5e-6, 3e-5))


def weight_scale() -> float:
    return knob("weight_scale", 0.02, (0.02, 0.05))


def training_steps(lr: float, scale: float) -> int:
    """Optimizer steps on one batch: Adam moves a weight by about ``lr`` a step, so HORIZON of
    the weights' std takes HORIZON * scale / lr of them (20 at the defaults, 7 to 100 over the
    knobs' ranges)."""
    return max(1, round(HORIZON * scale / lr))


def save_tiny_llama(scale: float) -> Path:
    """Save the tiny Llama in float32 (as checkpoints are trained from) and return its folder."""
    tiny_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
        initializer_range=scale,
    )
    return save_pretrained_to_temp(LlamaForCausalLM(config))


def batch(device: torch.device) -> torch.Tensor:
    """Two sequences of 16 seeded token ids: the inputs, and (shifted inside) the labels."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, VOCAB, (2, 16), generator=generator).to(device)


def train(model, optimizer, steps: int, autocast: torch.dtype | None = None) -> float:
    """``steps`` steps of causal-LM training on one batch; the last loss."""
    input_ids = batch(model.device)
    for _ in range(steps):
        with torch.autocast(model.device.type, dtype=autocast, enabled=autocast is not None):
            loss = model(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    print(f"[train] {steps} steps, last loss {loss.item():.4f}")
    return loss.item()


def snapshot(model) -> dict[str, torch.Tensor]:
    """Every element of the decoder layer's projection weights (q, k, v, o, gate, up, down),
    one entry each (``name[i]``), as float32 copies: the weights every step updates."""
    return {
        f"{name}[{i}]": value
        for name, weight in model.named_parameters()
        if ".layers." in name and weight.dim() == 2
        for i, value in enumerate(weight.detach().float().flatten().clone().unbind())
    }


def update_error(checkpoint: Path, lr: float, steps: int, before: dict, after: dict) -> float:
    """Relative error of the updates training made (``after - before``) against the same
    training run in float32 throughout: ||delta - delta_float32|| / ||delta_float32||."""
    reference = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32)
    reference.to(next(iter(before.values())).device)
    start = snapshot(reference)
    train(reference, torch.optim.AdamW(reference.parameters(), lr=lr), steps)
    end = snapshot(reference)
    delta = torch.stack([after[name] - before[name] for name in before])
    expected = torch.stack([end[name] - start[name] for name in start])
    return ((delta - expected).norm() / expected.norm()).item()
