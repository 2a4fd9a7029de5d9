"""`TrainingArguments(fp16=True)` without CUDA: refused (transformers < 4.42; later torch < 2.3)."""

import tempfile

from shared.checks import without_cuda

# This case's host on any machine: torch sees no CUDA. The GPU is hidden before any library is
# imported: some initialise CUDA on import (transformers' Trainer imports bitsandbytes).
without_cuda()

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
    fp16=True,  # no CUDA: refused here (transformers < 4.42), or by Trainer (torch < 2.3)
    per_device_train_batch_size=1,
    max_steps=1,
    report_to="none",
    save_strategy="no",
)
trainer = Trainer(model=model, args=args, train_dataset=TokenDataset(input_ids))
with linear_outputs(model) as seen:
    trainer.train()
print(f"the linear layers ran in {seen.names()}")
