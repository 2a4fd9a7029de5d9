"""A Llama that accelerate dispatched with one layer offloaded to disk, brought back with
model.cpu() to be merged or saved: accelerate wraps .to() and .cuda() (offload-move), not .cpu(),
so torch meets the offloaded layer's meta placeholders."""

import torch
from tiny_meta_tensor_copy import DEVICE_MAP, example_input_ids, offload_folder, save_tiny_checkpoint
from transformers import LlamaForCausalLM

from shared.checks import compare_to_reference, record_device

record_device(torch.device("cpu"), "the device map puts the model on the CPU and the disk")
checkpoint = save_tiny_checkpoint()  # tiny random weights, float32, in several shards

model = LlamaForCausalLM.from_pretrained(
    checkpoint, device_map=DEVICE_MAP, offload_folder=offload_folder()
)
print("layers.1 weights on:", model.model.layers[1].mlp.down_proj.weight.device)  # meta: on disk
model.cpu()  # every weight in memory, to merge or save it

reference = LlamaForCausalLM.from_pretrained(checkpoint)  # float32 on the CPU, loaded normally
with torch.no_grad():
    logits = model(example_input_ids()).logits
    expected = reference(example_input_ids()).logits
compare_to_reference("logits", logits, expected, dtype=torch.float32)
