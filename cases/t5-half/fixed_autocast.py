"""T5 v1.1 encoder under float16 autocast with `wo` taken out of it: `wo` in float32, no NaN."""

import torch
from tiny_t5_half import example_input_ids, record_wo_outputs, save_tiny_checkpoint
from transformers import T5EncoderModel

from shared.checks import check_that, compare_to_reference, measure_inf, measure_nan, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # tiny random weights, saved in float32

model = T5EncoderModel.from_pretrained(checkpoint).to(device)  # float32, as AMP training keeps it
for block in model.encoder.block:  # the fix: wo runs outside autocast, in float32
    wo = block.layer[-1].DenseReluDense.wo
    wo.forward = torch.autocast(device.type, enabled=False)(wo.forward)

# The root cause, visible before anything runs: which dtype the feed-forward `wo` ended up in.
print("T5EncoderModel._keep_in_fp32_modules:", T5EncoderModel._keep_in_fp32_modules)
feed_forward = model.encoder.block[0].layer[-1].DenseReluDense
print("block 0 wi_0:", feed_forward.wi_0.weight.dtype, "| wo:", feed_forward.wo.weight.dtype)

wo_outputs = record_wo_outputs(model)  # as they leave wo: float16 under autocast
input_ids = example_input_ids(device)
with torch.no_grad(), torch.autocast(device.type, dtype=torch.float16):
    output = model(input_ids=input_ids).last_hidden_state
print(f"encoder output: {int(output.isinf().sum())} inf, {int(output.isnan().sum())} NaN")
inf = measure_inf("wo outputs", torch.cat(wo_outputs))
check_that("wo outputs", inf == 0, f"share of inf {inf:g}: wo stayed in range")
# The documented symptom: NaN. The residual stream is float32 here, so T5's float16 clamp
# never fires: the inf reaches the next RMS norm (inf * rsqrt(inf) = NaN) and attention.
measure_nan("encoder output NaN", output)

reference = T5EncoderModel.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
with torch.no_grad():
    expected = reference(input_ids=input_ids).last_hidden_state
# float32 (the final norm's weight is), float16 matmuls elsewhere. Tolerance: see README.
compare_to_reference("encoder output", output, expected, dtype=torch.float32, atol=3e-2, rtol=3e-2)
