"""Float32 master weights, bfloat16 compute under autocast: every update lands, as in float32."""

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

from shared.checks import check_that, measure_changed, pick_device

device = pick_device()
checkpoint = save_tiny_llama()  # tiny random Llama, saved in float32
lr = learning_rate()

# AdamW keeps its states and makes its steps in the dtype of the weights it is given.
model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=lr)  # w -= lr * m / sqrt(v), rounded
before = snapshot(model)
train(model, optimizer, autocast=torch.bfloat16)  # the fix: float32 master weights, bf16 matmuls

after = snapshot(model)
changed = measure_changed(f"weights changed by {STEPS} AdamW steps", before, after, "weights")
check_that("updates kept", changed >= 0.99, f"{changed:.1%} of the weights changed")
error = update_error(checkpoint, lr, before, after)  # against the same training in float32
check_that("updates vs float32 training", error <= 0.1, f"relative error {error:.3f}")
