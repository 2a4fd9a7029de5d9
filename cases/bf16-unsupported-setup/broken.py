"""`TrainingArguments(bf16=True)` on a host where torch sees no CUDA device, without `use_cpu`:
transformers >= 4.52 refuses, `ValueError: Your setup doesn't support bf16/gpu.`"""

import tempfile

from shared.checks import without_cuda

# This case's host on any machine: torch sees no CUDA. The GPU is hidden before any library is
# imported: some initialise CUDA on import (transformers' Trainer imports bitsandbytes).
without_cuda()

from tiny_bf16_unsupported_setup import (  # noqa: E402
    TokenDataset,
    example_input_ids,
    linear_outputs,
    tiny_model,
)
from transformers import Trainer, TrainingArguments  # noqa: E402

model = tiny_model()
input_ids = example_input_ids()

args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    bf16=True,  # no bf16 GPU and use_cpu not set: refused here (transformers >= 4.52)
    per_device_train_batch_size=1,
    max_steps=1,
    report_to="none",
    save_strategy="no",
)
trainer = Trainer(model=model, args=args, train_dataset=TokenDataset(input_ids))
with linear_outputs(model) as seen:
    loss = trainer.train().training_loss
print(f"the linear layers ran in {seen.names()}; loss {loss:.4f}")
