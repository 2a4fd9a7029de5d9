"""Not a case: a denoiser cast to bfloat16, called by keyword with the float32 latents the caller
drew (torch.randn's default dtype), so its very first layer raises.

From reports of "Input type (float) and bias type (c10::Half) should be the same" raised in a
UNet's conv_in (shunk031/training-free-structured-diffusion-guidance#10; Hotshot-XL#44's
bfloat16 form): the sample never cast to the model's dtype. Expected: conv_in named, the input
never cast. The model is called by keyword and its first module raises: what the script gave
must be read from the call that raised."""

import torch
from torch import nn


class TinyDenoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(4, 8, kernel_size=3, padding=1)
        self.time = nn.Linear(1, 8)
        self.conv_out = nn.Conv2d(8, 4, kernel_size=3, padding=1)

    def forward(self, sample, timestep):
        hidden = self.conv_in(sample) + self.time(timestep)[:, :, None, None]
        return self.conv_out(hidden.relu())


torch.manual_seed(0)
unet = TinyDenoiser().to(torch.bfloat16)
latents = torch.randn(1, 4, 8, 8)  # float32: never cast to the denoiser's dtype
timestep = torch.ones(1, 1, dtype=torch.bfloat16)
print(unet(sample=latents, timestep=timestep).shape)
