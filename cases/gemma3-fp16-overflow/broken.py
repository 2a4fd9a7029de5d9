"""Gemma 3 loaded in float16, sampled: NaN probabilities, torch.multinomial refuses them."""

import torch
from tiny_gemma3_fp16_overflow import example_input_ids, next_token_logits, save_tiny_gemma3
from transformers import Gemma3ForCausalLM

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_gemma3()  # tiny random Gemma 3, saved in float32

model = Gemma3ForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float16)  # as in #36822
model.to(device)

# The root cause, visible before anything runs: the post-FFN norm's weight, and float16's range.
norm = model.model.layers[0].post_feedforward_layernorm
print(f"post_feedforward_layernorm.weight: {norm.weight.max().item():.3g} ({norm.weight.dtype})")
print(f"largest float16: {torch.finfo(torch.float16).max:.6g}")

input_ids = example_input_ids(device)
torch.manual_seed(0)  # the sampling draws
with torch.no_grad():
    generated = model.generate(input_ids, do_sample=True, max_new_tokens=6)
print("generated ids:", generated[0, input_ids.shape[1] :].tolist())

reference = Gemma3ForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
with torch.no_grad():
    expected = next_token_logits(reference, input_ids)
    output = next_token_logits(model, input_ids)
compare_to_reference("next-token logits", output, expected, dtype=torch.float16)
