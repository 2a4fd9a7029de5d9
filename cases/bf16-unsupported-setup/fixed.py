"""`TrainingArguments(bf16=True, use_cpu=True)`: bfloat16 mixed precision on the CPU, said so."""

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

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    bf16=True,
    use_cpu=True,  # the fix: the CPU is meant; its bfloat16 autocast runs the step
    per_device_train_batch_size=1,
    max_steps=1,
    report_to="none",
    save_strategy="no",
)
trainer = Trainer(model=model, args=args, train_dataset=TokenDataset(input_ids))
with linear_outputs(model) as seen:
    loss = trainer.train().training_loss
print(f"the linear layers ran in {seen.names()}; loss {loss:.4f}")
check_against_float32(seen, loss, input_ids, torch.bfloat16)
