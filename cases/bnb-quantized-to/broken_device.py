"""A 4-bit bitsandbytes model moved after loading, `model.to(device)`: refused < 4.45."""

import torch
from tiny_bnb_quantized_to import (
    dequantized_reference,
    example_input_ids,
    load_4bit,
    save_tiny_checkpoint,
)

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()
input_ids = example_input_ids(device)

model = load_4bit(checkpoint, device, torch.float32)  # BitsAndBytesConfig(load_in_4bit=True)
model = model.to(device)  # a move (to where it already is, as a script does): refused < 4.45
reference = dequantized_reference(model, checkpoint)  # before a forward repacks the codes
with torch.no_grad():
    logits = model(input_ids).logits
    expected = reference(input_ids.cpu()).logits
# float32 logits of order 0.6; bitsandbytes' CPU 4-bit kernel computes in bfloat16 whatever the
# compute dtype (2.4e-3 measured, bitsandbytes 0.50.2): 1e-2; the unquantized model is 6.7e-2 off
compare_to_reference("logits", logits, expected, dtype=torch.float32, atol=1e-2, rtol=1e-2)
