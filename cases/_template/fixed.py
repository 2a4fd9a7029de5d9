"""A bfloat16 projector fed an input cast to the projector's dtype."""

import torch
from tiny_template import example_input, tiny_projector

from shared.checks import compare_to_reference, pick_device

device = pick_device()
projector = tiny_projector().to(device)
reference = projector(example_input().to(device))  # float32 reference, before the cast

projector.to(torch.bfloat16)
output = projector(example_input().to(device, projector.weight.dtype))  # the fix
compare_to_reference("projection", output, reference, dtype=torch.bfloat16)
