"""What the gradscaler-unscale-twice variants share: a tiny float32 Llama, four micro-batches
(two optimizer steps of two accumulated micro-steps), and the float32 run of the same steps.

``LlamaForCausalLM`` (transformers), 2 layers of hidden 64, randomly initialised (seeded);
nothing is downloaded. The step is the one the upstream loops take: the loss divided by the
accumulation steps, the gradients clipped to ``MAX_NORM`` on the optimizer step, SGD.
"""

from __future__ import annotations

import torch
from transformers import LlamaForCausalLM

from shared.tiny_models import knob, quiet_hf_logging, tiny_llama_config, tiny_seed

quiet_hf_logging()

ACCUMULATION = 2  # micro-steps per optimizer step (gradient_accumulation_steps)
OPTIMIZER_STEPS = 2
# The clip: transformers' default max_grad_norm (1.0) down to QLoRA's (0.3). The tiny model's
# accumulated gradient norm is 2.9: the clip bites over the whole range.
MAX_NORM = knob("max_grad_norm", 1.0, (0.3, 1.0))
LR = 0.5  # large, so the updates (and any error in them) show in the weights
BATCH, TOKENS = 2, 8


def build_llama() -> LlamaForCausalLM:
    """A tiny Llama in float32 (no dropout: the float32 run is the same computation)."""
    tiny_seed(0)
    return LlamaForCausalLM(tiny_llama_config())


def micro_batches(device: torch.device) -> list[torch.Tensor]:
    """Token ids for every micro-step, used as the labels too (causal LM loss)."""
    generator = torch.Generator().manual_seed(1)
    vocab = tiny_llama_config().vocab_size
    shape = (ACCUMULATION * OPTIMIZER_STEPS, BATCH, TOKENS)
    return list(torch.randint(0, vocab, shape, generator=generator).to(device))


def train_float32(model: LlamaForCausalLM, device: torch.device) -> None:
    """The same steps in float32, no autocast, no GradScaler: the reference."""
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step, input_ids in enumerate(micro_batches(device)):
        loss = model(input_ids=input_ids, labels=input_ids).loss / ACCUMULATION
        loss.backward()
        if (step + 1) % ACCUMULATION == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
            optimizer.step()
            optimizer.zero_grad()


def weights(model: torch.nn.Module) -> torch.Tensor:
    """Every weight, flattened into one float32 vector."""
    return torch.cat([p.detach().float().flatten() for p in model.parameters()])
