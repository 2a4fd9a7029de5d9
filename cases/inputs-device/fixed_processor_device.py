"""A Llama on CUDA, its ids moved with it, and the minimum length asked of generate itself:
generate builds its MinLengthLogitsProcessor with the ids' device, so the processor's
end-of-sequence ids sit with the scores."""

import sys

import torch
from tiny_inputs_device import MIN_LENGTH, PROMPT, check_generated, tiny_llama, tiny_tokenizer

from shared.checks import pick_device

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

check_generated(model, output_ids)  # vs the same weights in float32 on the CPU
