"""The same blind spot with a dtype cast, BROKEN: model.to(dtype=float16) misses the tower."""

import torch
from tiny_omnilmm import (
    add_lora,
    example_batch,
    load_tiny_omnilmm,
    save_tiny_checkpoint,
)

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # tiny random weights, saved in float32

model = add_lora(load_tiny_omnilmm(checkpoint, dtype=torch.float32))
model.to(device=device, dtype=torch.float16)  # every registered weight; not the list-held tower

print("vision tower (list-held):", model.vpm.device, model.vpm.dtype)
print("projector:", model.projector.weight.device, model.projector.weight.dtype)

batch = example_batch(device)
embedding = model.get_vllm_embedding(batch)

reference = load_tiny_omnilmm(checkpoint, dtype=torch.float32)  # same weights, on the CPU
compare_to_reference(
    "vision+text embedding",
    embedding,
    reference.get_vllm_embedding(example_batch(torch.device("cpu"))),
    dtype=torch.float16,
)
