"""OneTrainer float16 inpainting sampling, BROKEN: the mask's erode kernel is float32.

The sampler prepares the user's mask in the train dtype (float16), then erodes it with a 5x5
kernel: a bias-free Conv2d with replicate padding, created with torch's default dtype, float32.
A float16 mask into float32 weights; with no bias there is no bias check, so the text is the
weight check, and it differs by device:
    CUDA: RuntimeError: Input type (torch.cuda.HalfTensor) and weight type
          (torch.cuda.FloatTensor) should be the same
    CPU:  RuntimeError: expected scalar type Half but found Float   (torch >= 2.6)
"""

import torch
from torch import nn

from cases.onetrainer.tiny_inpainting import (
    encode,
    inpainting_mask_image,
    load_images,
    load_models,
    relative_l2,
    sample_and_decode,
    save_tiny_models,
    scale_to_latent,
    to_tensor_like_torchvision,
)
from shared.checks import check_that, compare_to_reference, pick_device

device = pick_device()
checkpoints = save_tiny_models()  # tiny random weights, saved in float32


def sample(dtype: torch.dtype) -> torch.Tensor:
    """Inpaint the training images in ``dtype``: erode the mask, condition, sample, decode."""
    unet, vae = load_models(checkpoints, dtype, device)
    image = load_images(dtype).to(device)
    mask = to_tensor_like_torchvision(inpainting_mask_image()).to(device, dtype)[None]
    erode = nn.Conv2d(
        1, 1, 5, padding=2, padding_mode="replicate", bias=False, device=device
    )  # created in torch's default dtype: float32
    nn.init.constant_(erode.weight.requires_grad_(False), 1 / 25)  # 5x5 mean
    print(f"mask: {mask.dtype}, erode kernel: {erode.weight.dtype}, UNet weights: {unet.dtype}")
    eroded_mask = (erode(mask) > 0.99).to(dtype)  # white only where all 5x5 neighbours are
    masked_image = image * (eroded_mask < 0.5)
    masked_latent = encode(vae, masked_image)
    latent_mask = scale_to_latent(eroded_mask, masked_latent).expand(len(image), -1, -1, -1)
    return sample_and_decode(unet, vae, latent_mask, masked_latent)


images = sample(torch.float16)
reference = sample(torch.float32)
error = relative_l2(images, reference)
check_that("sample relative L2 error", error < 2e-2, f"{error:.1e} (< 2e-2)")
compare_to_reference("sampled images", images, reference, dtype=torch.float16, atol=2e-2, rtol=0)
