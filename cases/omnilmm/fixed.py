"""OmniLMM-style LoRA fine-tuning in float16, FIXED: the list-held vision tower is moved too."""

import math

import torch
from tiny_omnilmm import (
    add_lora,
    assert_placement,
    changed_parameters,
    example_batch,
    load_tiny_omnilmm,
    lora_training_steps,
    save_tiny_checkpoint,
    snapshot,
)

from shared.checks import check_that, compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # tiny random weights, saved in float32

model = add_lora(load_tiny_omnilmm(checkpoint, dtype=torch.float16))  # as the fine-tune loads it
model.to(device)  # the LLM, the projector and the LoRA weights; the list-held tower stays
model.vpm.to(device=device, dtype=torch.float16)  # the fix: move the hidden tower explicitly
assert_placement(model, device)  # and prove nothing the forward uses was left behind

print("vision tower (list-held):", model.vpm.device, model.vpm.dtype)
print("llm:", model.llm.device, model.llm.dtype)

batch = example_batch(device)
embedding = model.get_vllm_embedding(batch)  # what the fine-tune's compute_loss calls first

reference = load_tiny_omnilmm(checkpoint, dtype=torch.float32)  # same weights, on the CPU
compare_to_reference(
    "vision+text embedding",
    embedding,
    reference.get_vllm_embedding(example_batch(torch.device("cpu"))),
    dtype=torch.float16,
)

before = snapshot(model)
losses = lora_training_steps(model, batch, steps=5)
print("losses:", ", ".join(f"{loss:.4f}" for loss in losses))
check_that("loss is finite", all(map(math.isfinite, losses)), f"{len(losses)} finite losses")
check_that("loss decreases", losses[-1] < losses[0], f"{losses[0]:.4f} -> {losses[-1]:.4f}")
changed = changed_parameters(model, before)
lora = {name for name in before if "lora_" in name}
check_that(
    "only LoRA weights change",
    changed == lora,
    f"{len(changed)} of {len(before)} parameters changed (list-held tower counted), "
    f"{len(changed & lora)} of them LoRA; LoRA weights: {len(lora)}",
)
