"""Llama in float32 under bf16 autocast, not `.to()`: inv_freq float32, long positions right."""

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

from shared.checks import check_that, compare_to_reference, measure_error, pick_device

device = pick_device()
checkpoint = save_tiny_llama()  # tiny random Llama, saved in float32

model = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)

# The root cause, visible before anything runs: the dtype RoPE's inverse frequencies are in.
print("lm_head:", model.lm_head.weight.dtype, "| inv_freq:", inv_freq_dtypes(model))

input_ids = example_input_ids(device)  # 3000 tokens
cos = record_cos(model)
with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
    output = logits(model, input_ids)

reference = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
expected_cos = record_cos(reference)
with torch.no_grad():
    expected = logits(reference, input_ids)
# The documented symptom: RoPE's cos table (independent of the weights); the logits show it.
error = measure_error("RoPE cos at positions > 2000", long_cos(cos), long_cos(expected_cos))
check_that("RoPE cos table", error < 0.01, f"max abs error {error:.2g} < 0.01 (bf16 rounding)")
measure_error("logits at positions < 100", output[:, :100], expected[:, :100])
long_output, long_expected = output[:, LONG:], expected[:, LONG:]
compare_to_reference(
    "logits at positions > 2000", long_output, long_expected, dtype=torch.bfloat16, atol=3.0, rtol=0
)
