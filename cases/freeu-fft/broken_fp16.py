"""A UNet with FreeU in float16: on diffusers < 0.38 FreeU's FFT raises
`RuntimeError: Unsupported dtype Half`."""

import torch
from tiny_freeu_fft import FREEU, build_unet, unet_inputs

from shared.checks import compare_to_reference, pick_device

device = pick_device()
dtype = torch.float16

reference = build_unet().to(device)  # float32, for the check below
reference.enable_freeu(**FREEU)
unet = build_unet().to(device, dtype)
unet.enable_freeu(**FREEU)  # scales the backbone, filters the skip features with an FFT

with torch.no_grad():
    output = unet(*unet_inputs(device, dtype)).sample
    expected = reference(*unet_inputs(device, torch.float32)).sample
compare_to_reference("UNet output with FreeU", output, expected, dtype=dtype)
