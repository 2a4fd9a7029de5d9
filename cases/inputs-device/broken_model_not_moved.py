"""The tokenizer's output moved to CUDA, the Llama left where from_pretrained put it (the CPU):
the reverse placement. generate warns that the input_ids are on another device type, then the
embedding lookup meets CUDA ids with CPU weights."""

import sys

import torch
from tiny_inputs_device import PROMPT, check_generated, tiny_llama, tiny_tokenizer

from shared.checks import pick_device

if not torch.cuda.is_available():  # the ids are moved to CUDA
    print(f"{sys.argv[0]} needs CUDA: the ids are moved to CUDA (README.md).")
    sys.exit(2)
device = pick_device()
tokenizer = tiny_tokenizer()
model = tiny_llama(len(tokenizer))

inputs = tokenizer(PROMPT, return_tensors="pt").to(device)  # the ids on CUDA
print("model on:", model.device, "| input_ids on:", inputs["input_ids"].device)

output_ids = model.generate(**inputs, max_new_tokens=4, do_sample=False)

check_generated(model, output_ids)  # vs the same weights in float32 on the CPU
