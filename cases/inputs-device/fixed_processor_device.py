"""A Llama on CUDA, its ids moved with it, and the minimum length asked of generate itself:
generate builds its MinLengthLogitsProcessor with the ids' device, so the processor's
end-of-sequence ids sit with the scores."""

import sys

import torch
from tiny_inputs_device import MIN_LENGTH, PROMPT, tiny_llama, tiny_tokenizer

from shared.checks import compare_to_reference, pick_device

if not torch.cuda.is_available():  # the scores are on CUDA, the processor's ids on the CPU
    print(f"{sys.argv[0]} needs CUDA: the model runs on CUDA (README.md).")
    sys.exit(2)
device = pick_device()
tokenizer = tiny_tokenizer()
model = tiny_llama(len(tokenizer)).to(device)

inputs = tokenizer(PROMPT, return_tensors="pt").to(model.device)
output_ids = model.generate(
    **inputs, min_length=MIN_LENGTH, max_new_tokens=4, do_sample=False
)  # the fix: generate makes the processor on the ids' device

reference = tiny_llama(len(tokenizer))  # the same weights, float32 on the CPU
with torch.no_grad():
    logits = model(output_ids.to(device)).logits
    expected = reference(output_ids.cpu()).logits
# float32 both, CUDA vs CPU kernels: 1e-4 on logits of order 0.1
compare_to_reference("logits of the generated sequence", logits, expected, dtype=torch.float32,
                     atol=1e-4, rtol=1e-4)  # fmt: skip
