"""The same blind spot with a dtype cast, BROKEN: `model.to(dtype=float16)` misses the tower.

Runs on the CPU with a real error from real code. The model is loaded in float32 and wrapped
with LoRA, then cast as a whole with `model.to(device=..., dtype=torch.float16)` (what an fp16
engine such as DeepSpeed's does with `module.half()`). The list-held vision tower stays
float32; the pixels are cast to the tower's own dtype, so the tower runs, but its float32
output meets the float16 projector:
    RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half
On CUDA the tower is also left on the CPU and its Conv2d fails first:
    RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor)
    should be the same
"""

import torch

from cases.omnilmm.tiny_omnilmm import (
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
