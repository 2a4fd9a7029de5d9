"""`TrainingArguments(bf16=True, use_cpu=True)`: the mixed precision the CPU supports."""

import tempfile

from shared.checks import check_that, compare_to_reference, without_cuda

# This case's host on any machine: torch sees no CUDA. The GPU is hidden before any library is
# imported: some initialise CUDA on import (transformers' Trainer imports bitsandbytes).
without_cuda()

import torch  # noqa: E402
from tiny_accelerate_fp16_no_cuda import (  # noqa: E402
    TokenDataset,
    example_input_ids,
    linear_outputs,
    tiny_model,
)
from transformers import Trainer, TrainingArguments  # noqa: E402

model = tiny_model()
input_ids = example_input_ids()[:1]  # one example: the step's batch, in a known order

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    bf16=True,  # the fix: bfloat16 autocast runs on the CPU
    use_cpu=True,  # and say the CPU is meant (transformers 5 asks for it with bf16)
    per_device_train_batch_size=1,
    max_steps=1,
    report_to="none",
    save_strategy="no",
)
trainer = Trainer(model=model, args=args, train_dataset=TokenDataset(input_ids))
with linear_outputs(model) as seen:
    trainer.train()
print(f"the linear layers ran in {seen.names()}")
check_that("mixed precision", seen.dtypes == {torch.bfloat16}, f"linear layers: {seen.names()}")
with torch.no_grad():  # float32: the same seeded weights, no autocast
    reference = tiny_model()(input_ids).logits
# the logits of the step's forward (before its update), computed under bfloat16 autocast
compare_to_reference("logits", seen.first_logits, reference, dtype=torch.bfloat16)
