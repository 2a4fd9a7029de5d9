"""A Llama that accelerate dispatched, one layer offloaded to disk, and a training loop that
moves only a model without an hf_device_map (transformers PR #41032): nothing moves."""

import torch
from tiny_offload_move import DEVICE_MAP, example_input_ids, offload_folder, save_tiny_checkpoint
from transformers import LlamaForCausalLM

from shared.checks import compare_to_reference, record_device

record_device(torch.device("cpu"), "the device map puts the model on the CPU and the disk")
checkpoint = save_tiny_checkpoint()  # tiny random weights, saved in float32
input_ids = example_input_ids()
target = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # Trainer's args.device

model = LlamaForCausalLM.from_pretrained(
    checkpoint, device_map=DEVICE_MAP, offload_folder=offload_folder()
)
print("hf_device_map:", model.hf_device_map)
print("layers.1 weights on:", model.model.layers[1].mlp.down_proj.weight.device)  # meta: on disk
with torch.no_grad():
    model(input_ids)  # works: accelerate's hooks bring layer 1 from the disk for the forward

if getattr(model, "hf_device_map", None) is None:  # the fix: accelerate placed it, leave it
    model.to(target)

reference = LlamaForCausalLM.from_pretrained(checkpoint)  # float32, for the check below
with torch.no_grad():
    output = model.model(input_ids).last_hidden_state  # the hooks bring inputs to their device
    expected = reference.model(input_ids).last_hidden_state
compare_to_reference("decoder output", output, expected, dtype=torch.float32)
