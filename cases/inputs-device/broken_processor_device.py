"""A Llama on CUDA, its ids moved with it, and a MinLengthLogitsProcessor built as transformers
4.40's greedy_search example builds it: the processor makes its end-of-sequence ids once, with
torch.tensor(..., device=device), device="cpu" by default, and its __call__ compares them with the
vocabulary on the scores' device: library code whose tensor stays on a fixed device."""

import sys

import torch
from tiny_inputs_device import MIN_LENGTH, PROMPT, tiny_llama, tiny_tokenizer
from transformers import LogitsProcessorList, MinLengthLogitsProcessor

from shared.checks import compare_to_reference, pick_device

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

reference = tiny_llama(len(tokenizer))  # the same weights, float32 on the CPU
with torch.no_grad():
    logits = model(output_ids.to(device)).logits
    expected = reference(output_ids.cpu()).logits
# float32 both, CUDA vs CPU kernels: 1e-4 on logits of order 0.1
compare_to_reference("logits of the generated sequence", logits, expected, dtype=torch.float32,
                     atol=1e-4, rtol=1e-4)  # fmt: skip
