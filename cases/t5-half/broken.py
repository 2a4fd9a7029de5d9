"""T5 v1.1 encoder loaded in float32, then `.half()`: `wo` is cast too and overflows, silently."""

import torch
from tiny_t5_half import example_input_ids, save_tiny_checkpoint
from transformers import T5EncoderModel

from shared.checks import measure_error, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # tiny random weights, saved in float32

model = T5EncoderModel.from_pretrained(checkpoint).half().to(device)

# The root cause, visible before anything runs: which dtype the feed-forward `wo` ended up in.
print("T5EncoderModel._keep_in_fp32_modules:", T5EncoderModel._keep_in_fp32_modules)
feed_forward = model.encoder.block[0].layer[-1].DenseReluDense
print("block 0 wi_0:", feed_forward.wi_0.weight.dtype, "| wo:", feed_forward.wo.weight.dtype)

# Count the inf each `wo` returns, before T5Block's float16 clamp makes them finite again.
wo_inf = []
for block in model.encoder.block:
    wo = block.layer[-1].DenseReluDense.wo
    wo.register_forward_hook(lambda module, args, out: wo_inf.append(int(out.isinf().sum())))

input_ids = example_input_ids(device)
with torch.no_grad():
    output = model(input_ids=input_ids).last_hidden_state
print(f"inf out of each wo: {wo_inf}")
print(f"encoder output: {int(output.isinf().sum())} inf, {int(output.isnan().sum())} NaN")

reference = T5EncoderModel.from_pretrained(checkpoint, dtype=torch.float32).to(device)
with torch.no_grad():
    measure_error("encoder output", output, reference(input_ids=input_ids).last_hidden_state)
