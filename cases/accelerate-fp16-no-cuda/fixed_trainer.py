"""`TrainingArguments(bf16=True)` on the CPU: the mixed precision the CPU supports."""

import tempfile

import torch
from tiny_accelerate_fp16_no_cuda import (
    TokenDataset,
    example_input_ids,
    linear_dtypes,
    tiny_model,
    torch_build,
)
from transformers import Trainer, TrainingArguments

from shared.checks import check_that, compare_to_reference, record_device

record_device(torch.device("cpu"), torch_build())
model = tiny_model()
input_ids = example_input_ids()

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    bf16=True,  # the fix: bfloat16 autocast runs on the CPU
    use_cpu=True,  # and say the CPU is meant (transformers 5 asks for it with bf16)
    per_device_train_batch_size=2,
    max_steps=1,
    report_to="none",
    save_strategy="no",
)
trainer = Trainer(model=model, args=args, train_dataset=TokenDataset(input_ids))
with linear_dtypes(model) as seen:
    result = trainer.train()
print(f"bf16=True: the linear layers ran in {sorted(map(str, seen))}")
check_that("mixed precision", seen == {torch.bfloat16}, f"the linear layers ran in {seen}")
with torch.no_grad():  # float32: the same seeded weights, no autocast, before any step
    reference = tiny_model()(input_ids, labels=input_ids).loss
# the step's loss (before its update), computed under bfloat16 autocast
loss = torch.tensor(result.training_loss, dtype=torch.float32)
compare_to_reference("training loss", loss, reference, dtype=torch.float32, atol=5e-2, rtol=5e-2)
