"""`Accelerator(mixed_precision="fp16")` where torch sees no CUDA (a CPU-only torch wheel, or no
GPU): accelerate <= 0.15 refuses, `ValueError: fp16 mixed precision requires a GPU`."""

from shared.checks import without_cuda

# This case's host on any machine: torch sees no CUDA. The GPU is hidden before any library is
# imported: some initialise CUDA on import (transformers' Trainer imports bitsandbytes).
without_cuda()

import torch  # noqa: E402
from accelerate import Accelerator  # noqa: E402
from tiny_accelerate_fp16_no_cuda import example_input_ids, linear_outputs, tiny_model  # noqa: E402

model = tiny_model()
input_ids = example_input_ids()

accelerator = Accelerator(mixed_precision="fp16")  # accelerate <= 0.15: no CUDA, refused here
model, optimizer = accelerator.prepare(model, torch.optim.AdamW(model.parameters(), lr=1e-4))
with linear_outputs(model) as seen, torch.no_grad():
    logits = model(input_ids).logits
print(f"{accelerator.mixed_precision=}: the linear layers ran in {seen.names()}")
