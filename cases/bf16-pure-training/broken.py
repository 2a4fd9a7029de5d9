"""Pure bfloat16 fine-tuning: AdamW steps bfloat16 weights, and most updates round away."""

import torch
from tiny_bf16_pure_training import (
    learning_rate,
    save_tiny_llama,
    snapshot,
    train,
    training_steps,
    update_error,
    weight_scale,
)
from transformers import LlamaForCausalLM

from shared.checks import measure_changed, pick_device

device = pick_device()
scale, lr = weight_scale(), learning_rate()
checkpoint = save_tiny_llama(scale)  # tiny random Llama, saved in float32
steps = training_steps(lr, scale)

# AdamW keeps its states and makes its steps in the dtype of the weights it is given.
model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.bfloat16).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=lr)  # w -= lr * m / sqrt(v), rounded
before = snapshot(model)
train(model, optimizer, steps)  # bfloat16 weights: half the memory of float32 ones

after = snapshot(model)
changed = measure_changed("weights changed by training", before, after, "weights")
error = update_error(checkpoint, lr, steps, before, after)  # against the same training in float32
print(f"[evidence] updates vs float32 training: relative error {error:.3f}")
