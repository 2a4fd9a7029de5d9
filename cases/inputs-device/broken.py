"""A Llama moved to CUDA, fed the tokenizer's output as it comes (on the CPU): generate warns that
the input_ids are on another device type, then the embedding lookup meets CPU ids."""

import sys

import torch
from tiny_inputs_device import PROMPT, tiny_llama, tiny_tokenizer

from shared.checks import compare_to_reference, pick_device

if not torch.cuda.is_available():  # the model runs on CUDA, the tokenizer gives CPU tensors
    print(f"{sys.argv[0]} needs CUDA: the model runs on CUDA (README.md).")
    sys.exit(2)
device = pick_device()
tokenizer = tiny_tokenizer()
model = tiny_llama(len(tokenizer)).to(device)

inputs = tokenizer(PROMPT, return_tensors="pt")  # a BatchEncoding of CPU tensors
print("model on:", model.device, "| input_ids on:", inputs["input_ids"].device)

output_ids = model.generate(**inputs, max_new_tokens=4, do_sample=False)

reference = tiny_llama(len(tokenizer))  # the same weights, float32 on the CPU
with torch.no_grad():
    logits = model(output_ids.to(device)).logits
    expected = reference(output_ids.cpu()).logits
# float32 both, CUDA vs CPU kernels: 1e-4 on logits of order 0.1
compare_to_reference("logits of the generated sequence", logits, expected, dtype=torch.float32,
                     atol=1e-4, rtol=1e-4)  # fmt: skip
