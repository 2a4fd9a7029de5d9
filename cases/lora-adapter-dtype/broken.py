"""A float32-trained LoRA adapter (its lm_head in modules_to_save) loaded onto a float16 base
with low_cpu_mem_usage=True: the head's float32 copy is kept, and float16 hidden states meet it."""

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
with torch.no_grad():
    logits = head_logits(model, prompt().to(device))  # raises in lm_head: float16 input, float32 weight
compare_to_reference("logits", logits, reference, dtype=torch.float16)
