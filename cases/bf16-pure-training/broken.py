"""Pure bfloat16 fine-tuning: AdamW steps bfloat16 weights, and most updates round away."""

import torch
from tiny_bf16_pure_training import (
    STEPS,
    learning_rate,
    save_tiny_llama,
    snapshot,
    train,
    update_error,
)
from transformers import LlamaForCausalLM

from shared.checks import measure_changed, pick_device

device = pick_device()
checkpoint = save_tiny_llama()  # tiny random Llama, saved in float32
lr = learning_rate()

# AdamW keeps its states and makes its steps in the dtype of the weights it is given.
model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.bfloat16).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=lr)  # w -= lr * m / sqrt(v), rounded
before = snapshot(model)
train(model, optimizer)  # bfloat16 weights: half the memory of float32 ones

after = snapshot(model)
changed = measure_changed(f"weights changed by {STEPS} AdamW steps", before, after, "weights")
error = update_error(checkpoint, lr, before, after)  # against the same training in float32
print(f"[evidence] updates vs float32 training: relative error {error:.3f}")
