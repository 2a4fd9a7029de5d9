"""A Llama built under accelerate's init_empty_weights, then filled and placed by
load_checkpoint_and_dispatch: the weights come from the checkpoint straight onto the device."""

import torch
from accelerate import init_empty_weights, load_checkpoint_and_dispatch
from tiny_meta_tensor_copy import example_input_ids, save_tiny_checkpoint
from transformers import LlamaConfig, LlamaForCausalLM

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # tiny random weights, float32, in several shards
with init_empty_weights():
    model = LlamaForCausalLM(LlamaConfig.from_pretrained(checkpoint))
print("parameters on:", {p.device.type for p in model.parameters()})

# the fix: no .to() of the meta skeleton; accelerate loads each shard onto the device
model = load_checkpoint_and_dispatch(model, checkpoint, device_map={"": str(device)})

reference = LlamaForCausalLM.from_pretrained(checkpoint)  # float32 on the CPU, loaded normally
with torch.no_grad():
    logits = model(example_input_ids().to(device)).logits
    expected = reference(example_input_ids()).logits
# float32 both (CUDA vs CPU kernels when there is a GPU): 1e-4 on logits of order 0.1
compare_to_reference("logits", logits, expected, dtype=torch.float32, atol=1e-4, rtol=1e-4)
