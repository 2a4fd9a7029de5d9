"""OneTrainer float16 inpainting sampling, BROKEN: the erode kernel and the masks are float32."""

import torch
from tiny_inpainting import (
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
from torch import nn

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
    eroded_mask = (erode(mask) > 0.99).float()  # as upstream: float32; white where all 5x5 are
    masked_image = image * (1 - eroded_mask)  # the conditioning image: repaint area zeroed
    masked_latent = encode(vae, masked_image)
    latent_mask = (scale_to_latent(mask, masked_latent) > 0).float()  # as upstream: float32
    return sample_and_decode(unet, vae, latent_mask.expand(len(image), -1, -1, -1), masked_latent)


images = sample(torch.float16)
reference = sample(torch.float32)
error = relative_l2(images, reference)
check_that("sample relative L2 error", error < 2e-2, f"{error:.1e} (< 2e-2)")
compare_to_reference("sampled images", images, reference, dtype=torch.float16, atol=2e-2, rtol=0)
