"""A Llama loaded in float16 and run on the CPU: torch <= 2.1 has no CPU float16 matmul."""

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

dtype = torch.float16  # copied from a GPU snippet (Llama 2's checkpoints are float16)
model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=dtype).to(device)
print("weights:", model.lm_head.weight.dtype, "on", model.device)
with torch.no_grad():
    logits = llama_logits(model, input_ids)  # torch <= 2.1: "addmm_impl_cpu_" not implemented
compare_to_reference("Llama logits", logits, reference, dtype=dtype)
