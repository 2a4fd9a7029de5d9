"""A Llama built under init_empty_weights and filled from every shard its index lists
(load_state_dict(strict=False, assign=True)): no key is missing, nothing is left on meta."""

import torch
from accelerate import init_empty_weights
from tiny_meta_tensor_copy import example_input_ids, read_shards, save_tiny_checkpoint, shard_files
from transformers import LlamaConfig, LlamaForCausalLM

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # tiny random weights, float32, in several shards
with init_empty_weights():
    model = LlamaForCausalLM(LlamaConfig.from_pretrained(checkpoint))

shards = shard_files(checkpoint)  # the fix: every shard the index lists
loaded = model.load_state_dict(read_shards(shards), strict=False, assign=True)
print(f"{len(loaded.missing_keys)} keys missing")
model.to(device)

reference = LlamaForCausalLM.from_pretrained(checkpoint)  # float32 on the CPU, loaded normally
with torch.no_grad():
    logits = model(example_input_ids().to(device)).logits
    expected = reference(example_input_ids()).logits
# float32 both (CUDA vs CPU kernels when there is a GPU): 1e-4 on logits of order 0.1
compare_to_reference("logits", logits, expected, dtype=torch.float32, atol=1e-4, rtol=1e-4)
