"""A float32-trained LoRA adapter loaded with low_cpu_mem_usage=True onto a float16 base, then
cast to the base dtype: the head copy and the LoRA weights in float16."""

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
model = PeftModel.from_pretrained(base, adapter, low_cpu_mem_usage=True).eval()
model.to(torch.float16)  # the fix: the adapters (and the head copy) in the base dtype
with torch.no_grad():
    logits = head_logits(model, prompt().to(device))
compare_to_reference("logits", logits, reference, dtype=torch.float16)
