"""A Llama on CUDA, its ids moved with it, and a MinLengthLogitsProcessor built as transformers
4.40's greedy_search example builds it: the processor makes its end-of-sequence ids once, with
torch.tensor(..., device=device), device="cpu" by default, and its __call__ compares them with the
vocabulary on the scores' device: library code whose tensor stays on a fixed device."""

import sys

import torch
from tiny_inputs_device import MIN_LENGTH, PROMPT, check_generated, tiny_llama, tiny_tokenizer
from transformers import LogitsProcessorList, MinLengthLogitsProcessor

from shared.checks import pick_device

if not torch.cuda.is_available():  # the scores are on CUDA, the processor's ids on the CPU
    print(f"{sys.argv[0]} needs CUDA: the model runs on CUDA (README.md).")
    sys.exit(2)
device = pick_device()
tokenizer = tiny_tokenizer()
model = tiny_llama(len(tokenizer)).to(device)

inputs = tokenizer(PROMPT, return_tensors="pt").to(model.device)
no_early_end = LogitsProcessorList(
    [MinLengthLogitsProcessor(MIN_LENGTH, eos_token_id=tokenizer.eos_token_id)]
)  # its ids made on the CPU
output_ids = model.generate(
    **inputs, logits_processor=no_early_end, max_new_tokens=4, do_sample=False
)

check_generated(model, output_ids)  # vs the same weights in float32 on the CPU
