"""A float32-trained LoRA adapter loaded onto a float16 base by the default load: the head copy
is made from the half head and the adapter's float32 values are copied into it."""

import torch
from peft import PeftModel
from tiny_lora_adapter_dtype import (
    float32_reference,
    head_logits,
    prompt,
    save_float32_adapter,
    save_tiny_checkpoint,
)
from transformers import LlamaForCausalLM

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()
adapter = save_float32_adapter(checkpoint)
reference = float32_reference(checkpoint, adapter).to(device)

base = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float16).to(device)
model = PeftModel.from_pretrained(base, adapter).eval()  # the fix: the default load copies into the half head
with torch.no_grad():
    logits = head_logits(model, prompt().to(device))
compare_to_reference("logits", logits, reference, dtype=torch.float16)
