"""Not a case: a LLaVA-style model whose projector is attached after the model was cast.

From reports of "mat1 and mat2 must have the same dtype" in custom vision towers
(PKU-YuanGroup/MoE-LLaVA#63, chflame163/ComfyUI_LayerStyle_Advance#69: a projector loaded or
built apart, left float32 while the rest went bfloat16). Expected: the projector is
named, as a submodule in another dtype than its model."""

import torch
from torch import nn


class PatchEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 8, kernel_size=4, stride=4)

    def forward(self, pixels):
        return self.patch(pixels).flatten(2).transpose(1, 2)


class TinyVisionLanguage(nn.Module):
    def __init__(self):
        super().__init__()
        self.vision = PatchEncoder()
        self.text = nn.Embedding(16, 12)

    def forward(self, pixels, ids):
        image = self.mm_projector(self.vision(pixels))
        return torch.cat([image, self.text(ids)], dim=1)


torch.manual_seed(0)
model = TinyVisionLanguage().to(torch.bfloat16)
model.mm_projector = nn.Linear(8, 12)  # built after the cast: float32
pixels = torch.randn(1, 3, 8, 8, dtype=torch.bfloat16)
print(model(pixels, torch.tensor([[1, 2, 3]])).shape)
