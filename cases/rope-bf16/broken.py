"""Llama loaded in float32, then `.to(torch.bfloat16)`: inv_freq rounded, long positions wrong."""

import torch
from tiny_rope_bf16 import (
    LONG,
    example_input_ids,
    inv_freq_dtypes,
    logits,
    long_cos,
    record_cos,
    save_tiny_llama,
)
from transformers import LlamaForCausalLM

from shared.checks import measure_error, pick_device

device = pick_device()
checkpoint = save_tiny_llama()  # tiny random Llama, saved in float32

model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
model.to(torch.bfloat16)  # what Trainer(bf16_full_eval=True) does

# The root cause, visible before anything runs: the dtype RoPE's inverse frequencies are in.
print("lm_head:", model.lm_head.weight.dtype, "| inv_freq:", inv_freq_dtypes(model))

input_ids = example_input_ids(device)  # 3000 tokens
cos = record_cos(model)
with torch.no_grad():
    output = logits(model, input_ids)

reference = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
expected_cos = record_cos(reference)
with torch.no_grad():
    expected = logits(reference, input_ids)
# The documented symptom: RoPE's cos table (independent of the weights); the logits show it.
measure_error("RoPE cos at positions > 2000", long_cos(cos), long_cos(expected_cos))
measure_error("logits at positions < 100", output[:, :100], expected[:, :100])
long_output, long_expected = output[:, LONG:], expected[:, LONG:]
measure_error("logits at positions > 2000", long_output, long_expected)
