"""MiniCPM-V-2 bf16 fine-tuning with the HF Trainer, CONTROL: the loss goes through model(...)."""

import tempfile

import torch
from tiny_minicpmv import TinyMiniCPMV, example_batch, save_tiny_checkpoint
from transformers import Trainer, TrainingArguments

from shared.checks import check_that, compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()
model = TinyMiniCPMV.from_pretrained(checkpoint, torch_dtype=torch.bfloat16)
batch = example_batch(torch.device("cpu"))
samples = [{key: value[i] for key, value in batch.items()} for i in range(2)]


class FineTuneTrainer(Trainer):
    first_loss = None

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)  # through forward, which the Trainer wrapped in autocast
        self.first_loss = outputs.loss.detach() if self.first_loss is None else self.first_loss
        return (outputs.loss, outputs) if return_outputs else outputs.loss


arguments = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    bf16=True,
    bf16_full_eval=True,  # the failing setup had both on: it is not the fix
    per_device_train_batch_size=2,
    max_steps=2,
    learning_rate=1e-4,
    report_to=[],
    save_strategy="no",
    use_cpu=device.type == "cpu",
    disable_tqdm=True,
)
trainer = FineTuneTrainer(model=model, args=arguments, train_dataset=samples)
trainer.train()

check_that("training loss", bool(torch.isfinite(trainer.first_loss)), f"{trainer.first_loss:.4f}")
reference = TinyMiniCPMV.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
reference_loss = reference(**{k: v.to(device) for k, v in batch.items()}).loss
compare_to_reference(
    "first-step loss", trainer.first_loss, reference_loss, dtype=torch.float32, atol=1e-2, rtol=0.0
)
