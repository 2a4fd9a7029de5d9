"""QLoRA's adapter merged into its 4-bit base with `merge_and_unload()`: W + BA is re-quantized."""

from peft import PeftModel
from tiny_qlora_merge_4bit import (
    before_merge,
    load_4bit,
    merge_outcome,
    save_tiny_checkpoint,
    save_trained_adapter,
)

from shared.checks import measure_error, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # the base model, bfloat16
adapter = save_trained_adapter(checkpoint)  # a LoRA adapter trained on it

base = load_4bit(checkpoint, device)  # BitsAndBytesConfig(load_in_4bit=True, nf4), as in training
model = PeftModel.from_pretrained(base, adapter)
before = before_merge(model)  # each base weight as the 4-bit layer computes with it, each delta
merged = model.merge_and_unload()  # peft warns, adds the delta, quantizes the sum to 4-bit again

merged_weights, expected, unit = merge_outcome(before, merged)
# in units of the adapter's largest delta entry: ~1 means the delta is gone
measure_error("merged weights", merged_weights.float() / unit, expected / unit)
