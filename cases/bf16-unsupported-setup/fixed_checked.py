"""bf16 asked only where the GPU supports it (`torch.cuda.is_bf16_supported()` checked first):
on a host without one the step runs in float32."""

import tempfile

from shared.checks import without_cuda

# This case's host on any machine: torch sees no CUDA. The GPU is hidden before any library is
# imported: some initialise CUDA on import (transformers' Trainer imports bitsandbytes).
without_cuda()

import torch  # noqa: E402
from tiny_bf16_unsupported_setup import (  # noqa: E402
    TokenDataset,
    check_against_float32,
    example_input_ids,
    linear_outputs,
    tiny_model,
)
from transformers import Trainer, TrainingArguments  # noqa: E402

model = tiny_model()
input_ids = example_input_ids()
# the fix: bf16 only where a GPU runs it (is_bf16_supported needs CUDA on old torch)
bf16_ok = torch.cuda.is_available() and torch.cuda.is_bf16_supported()

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    bf16=bf16_ok,
    per_device_train_batch_size=1,
    max_steps=1,
    report_to="none",
    save_strategy="no",
)
trainer = Trainer(model=model, args=args, train_dataset=TokenDataset(input_ids))
with linear_outputs(model) as seen:
    loss = trainer.train().training_loss
print(f"the linear layers ran in {seen.names()}; loss {loss:.4f}")
check_against_float32(seen, loss, input_ids, torch.bfloat16 if bf16_ok else torch.float32)
