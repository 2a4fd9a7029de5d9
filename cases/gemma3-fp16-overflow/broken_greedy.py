"""Gemma 3 loaded in float16, greedy: no error, all-NaN logits, argmax emits token 0 (<pad>)."""

import torch
from tiny_gemma3_fp16_overflow import example_input_ids, next_token_logits, save_tiny_gemma3
from transformers import Gemma3ForCausalLM

from shared.checks import measure_nan, pick_device

device = pick_device()
checkpoint = save_tiny_gemma3()  # tiny random Gemma 3, saved in float32

model = Gemma3ForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float16)  # as in #36822
model.to(device)

# The root cause, visible before anything runs: the post-FFN norm's weight, and float16's range.
norm = model.model.layers[0].post_feedforward_layernorm
print(f"post_feedforward_layernorm.weight: {norm.weight.max().item():.3g} ({norm.weight.dtype})")
print(f"largest float16: {torch.finfo(torch.float16).max:.6g}")

# Count the inf the post-FFN norm returns: its float32 product cast back to the model's dtype.
norm_inf = []
norm.register_forward_hook(lambda module, args, out: norm_inf.append(int(out.isinf().sum())))

input_ids = example_input_ids(device)
with torch.no_grad():
    out = model.generate(
        input_ids, do_sample=False, max_new_tokens=6, output_logits=True,
        return_dict_in_generate=True,
    )  # fmt: skip
print("generated ids:", out.sequences[0, input_ids.shape[1] :].tolist())
print(f"inf out of layer 0's post_feedforward_layernorm, per step: {norm_inf}")

with torch.no_grad():
    output = next_token_logits(model, input_ids)
measure_nan("next-token logits", output)  # NaN, not an error against float32: no figure to give
measure_nan("logits of the generated steps", torch.stack(out.logits))
