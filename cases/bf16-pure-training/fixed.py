"""Float32 master weights, bfloat16 compute under autocast: every update lands, as in float32."""

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

from shared.checks import check_that, measure_changed, pick_device

device = pick_device()
scale, lr = weight_scale(), learning_rate()
checkpoint = save_tiny_llama(scale)  # tiny random Llama, saved in float32
steps = training_steps(lr, scale)

# AdamW keeps its states and makes its steps in the dtype of the weights it is given.
model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=lr)  # w -= lr * m / sqrt(v), rounded
before = snapshot(model)
train(model, optimizer, steps, autocast=torch.bfloat16)  # the fix: float32 weights, bf16 matmuls

after = snapshot(model)
changed = measure_changed("weights changed by training", before, after, "weights")
check_that("updates kept", changed >= 0.99, f"{changed:.1%} of the weights changed")
error = update_error(checkpoint, lr, steps, before, after)  # against the same training in float32
check_that("updates vs float32 training", error <= 0.1, f"relative error {error:.3f}")
