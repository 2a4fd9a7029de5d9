"""A Llama loaded in bfloat16 on the CPU, as the maintainers advise: every torch has its kernels."""

import torch
from tiny_cpu_fp16_kernels import cpu, example_input_ids, llama_logits, save_tiny_llama
from transformers import LlamaForCausalLM

from shared.checks import compare_to_reference

device = cpu()  # no GPU: the snippet written for CUDA runs on the CPU as it is
checkpoint = save_tiny_llama()  # tiny random Llama, saved in float32
input_ids = example_input_ids()

reference_model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32)
with torch.no_grad():
    reference = llama_logits(reference_model, input_ids)  # float32 reference

dtype = torch.bfloat16  # the fix: CPU torch has bfloat16 kernels (or float32: slower)
model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=dtype).to(device)
print("weights:", model.lm_head.weight.dtype, "on", model.device)
with torch.no_grad():
    logits = llama_logits(model, input_ids)
compare_to_reference("Llama logits", logits, reference, dtype=dtype)
