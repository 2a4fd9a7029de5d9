"""`Accelerator(mixed_precision="bf16")` on the CPU: the mixed precision the CPU supports."""

from shared.checks import check_that, compare_to_reference, without_cuda

# This case's host on any machine: torch sees no CUDA. The GPU is hidden before any library is
# imported: some initialise CUDA on import (transformers' Trainer imports bitsandbytes).
without_cuda()

import torch  # noqa: E402
from accelerate import Accelerator  # noqa: E402
from tiny_accelerate_fp16_no_cuda import example_input_ids, linear_outputs, tiny_model  # noqa: E402

model = tiny_model()
input_ids = example_input_ids()

accelerator = Accelerator(mixed_precision="bf16")  # the fix: bfloat16 autocast runs on the CPU
model, optimizer = accelerator.prepare(model, torch.optim.AdamW(model.parameters(), lr=1e-4))
with linear_outputs(model) as seen, torch.no_grad():
    logits = model(input_ids).logits
print(f"{accelerator.mixed_precision=}: the linear layers ran in {seen.names()}")
check_that("mixed precision", seen.dtypes == {torch.bfloat16}, f"linear layers: {seen.names()}")
with torch.no_grad():  # float32: the same seeded weights, no autocast
    reference = tiny_model()(input_ids).logits
# accelerate hands the outputs back in float32; bfloat16 rounding inside
compare_to_reference("logits", logits.float(), reference, dtype=torch.float32, atol=5e-2, rtol=5e-2)
