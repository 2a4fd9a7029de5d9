"""A float32-trained LoRA adapter loaded with low_cpu_mem_usage=True onto a float16 base, run
under float16 autocast (as it was trained): autocast casts each matmul's operands."""

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
with torch.no_grad(), torch.autocast(device.type, dtype=torch.float16):  # the fix
    logits = head_logits(model, prompt().to(device))
compare_to_reference("logits", logits, reference, dtype=torch.float16)
