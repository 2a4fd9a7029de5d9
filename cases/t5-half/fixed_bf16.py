"""T5 v1.1 encoder loaded in float32, then `.to(torch.bfloat16)`: `wo` is cast too, in range."""

import torch
from tiny_t5_half import example_input_ids, record_wo_outputs, save_tiny_checkpoint
from transformers import T5EncoderModel

from shared.checks import check_that, compare_to_reference, measure_inf, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # tiny random weights, saved in float32

model = T5EncoderModel.from_pretrained(checkpoint).to(device, torch.bfloat16)  # the fix

# The root cause, visible before anything runs: which dtype the feed-forward `wo` ended up in.
print("T5EncoderModel._keep_in_fp32_modules:", T5EncoderModel._keep_in_fp32_modules)
feed_forward = model.encoder.block[0].layer[-1].DenseReluDense
print("block 0 wi_0:", feed_forward.wi_0.weight.dtype, "| wo:", feed_forward.wo.weight.dtype)

wo_outputs = record_wo_outputs(model)  # as they leave wo, before T5Block's float16 clamp
input_ids = example_input_ids(device)
with torch.no_grad():
    output = model(input_ids=input_ids).last_hidden_state
print(f"encoder output: {int(output.isinf().sum())} inf, {int(output.isnan().sum())} NaN")
# The documented symptom: wo overflowed float16 (inf), whatever the scale beyond 65504.
inf = measure_inf("wo outputs", torch.cat(wo_outputs))
check_that("wo outputs", inf == 0, f"share of inf {inf:g}: wo stayed in range")

reference = T5EncoderModel.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
with torch.no_grad():
    expected = reference(input_ids=input_ids).last_hidden_state
# bfloat16 everywhere (8 significant bits). Tolerance: see README.
compare_to_reference("encoder output", output, expected, dtype=torch.bfloat16, atol=2e-1, rtol=2e-1)
