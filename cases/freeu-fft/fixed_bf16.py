"""A UNet with FreeU in bfloat16, FreeU's FFT wrapped to run in float32 and cast back: works on
every diffusers (what diffusers >= 0.32 does itself)."""

import torch
from diffusers.utils import torch_utils
from tiny_freeu_fft import FREEU, build_unet, unet_inputs

from shared.checks import compare_to_reference, pick_device

device = pick_device()
dtype = torch.bfloat16
diffusers_fourier_filter = torch_utils.fourier_filter


def fourier_filter_fp32(x, threshold, scale):  # the fix: the FFT in float32, the result cast back
    return diffusers_fourier_filter(x.float(), threshold, scale).to(x.dtype)


torch_utils.fourier_filter = fourier_filter_fp32  # apply_freeu looks it up here at each call

reference = build_unet().to(device)  # float32, for the check below
reference.enable_freeu(**FREEU)
unet = build_unet().to(device, dtype)
unet.enable_freeu(**FREEU)  # scales the backbone, filters the skip features with an FFT

with torch.no_grad():
    output = unet(*unet_inputs(device, dtype)).sample
    expected = reference(*unet_inputs(device, torch.float32)).sample
compare_to_reference("UNet output with FreeU", output, expected, dtype=dtype)
