"""A Llama loaded with the device map that holds it where it is wanted (all on the CPU) instead
of an offloading map and a later move: no parameter is left on meta."""

import torch
from tiny_meta_tensor_copy import DEVICE_MAP, example_input_ids, offload_folder, save_tiny_checkpoint
from transformers import LlamaForCausalLM

from shared.checks import compare_to_reference, record_device

record_device(torch.device("cpu"), "the device map puts the model on the CPU and the disk")
checkpoint = save_tiny_checkpoint()  # tiny random weights, float32, in several shards

model = LlamaForCausalLM.from_pretrained(
    checkpoint, device_map=DEVICE_MAP | {"model.layers.1": "cpu"}, offload_folder=offload_folder()
)
print("layers.1 weights on:", model.model.layers[1].mlp.down_proj.weight.device)  # cpu
# the fix: the device map places every layer in memory, no model.cpu() afterwards

reference = LlamaForCausalLM.from_pretrained(checkpoint)  # float32 on the CPU, loaded normally
with torch.no_grad():
    logits = model(example_input_ids()).logits
    expected = reference(example_input_ids()).logits
compare_to_reference("logits", logits, expected, dtype=torch.float32)
