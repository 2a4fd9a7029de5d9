"""A Llama that accelerate dispatched, one layer offloaded to disk, then `model.bfloat16()`:
accelerate wraps only `.to` and `.cuda`, so nothing refuses it. It runs in bfloat16 (the hooks
cast each offloaded weight as they load it), but it is a cast after loading, not the fix: it
rounds every floating buffer too, Llama's rotary inv_freq that a load in bfloat16 keeps float32."""

import torch
from tiny_offload_move import (
    DEVICE_MAP,
    example_input_ids,
    offload_folder,
    rotary_inv_freq,
    save_tiny_checkpoint,
)
from transformers import LlamaForCausalLM

from shared.checks import measure_error, record_device

record_device(torch.device("cpu"), "the device map puts the model on the CPU and the disk")
checkpoint = save_tiny_checkpoint()  # tiny random weights, saved in float32
input_ids = example_input_ids()

model = LlamaForCausalLM.from_pretrained(
    checkpoint, device_map=DEVICE_MAP, offload_folder=offload_folder()
)
print("hf_device_map:", model.hf_device_map)
with torch.no_grad():
    model(input_ids)  # works: accelerate's hooks bring layer 1 from the disk for the forward

model.bfloat16()  # nn.Module._apply, not .to: accelerate's guard never sees it
layer1 = model.model.layers[1].mlp.down_proj.weight
print("layers.1 weights on:", layer1.device, layer1.dtype)  # meta, bfloat16: the placeholders

reference = LlamaForCausalLM.from_pretrained(checkpoint)  # float32, for the figures below
with torch.no_grad():
    output = model.model(input_ids).last_hidden_state  # the hooks cast the disk weights
    expected = reference.model(input_ids).last_hidden_state
print("decoder output:", output.dtype)
measure_error("decoder output", output, expected)  # as close as the fix's: the weights are cast
measure_error("rotary inv_freq", rotary_inv_freq(model), rotary_inv_freq(reference))
