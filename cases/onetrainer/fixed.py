"""OneTrainer float16 inpainting training, FIXED: the mask is made in the image's dtype."""

import torch
import torch.nn.functional as F
from tiny_inpainting import (
    generate_image_like,
    load_images,
    load_models,
    predict_noise,
    save_tiny_models,
    training_batch,
    training_scheduler,
)

from shared.checks import check_that, compare_to_reference, pick_device

device = pick_device()
checkpoints = save_tiny_models()  # tiny random weights, saved in float32


def training_step(dtype: torch.dtype):
    """One step of the trainer in ``dtype``: the UNet's noise prediction, the loss, the UNet."""
    unet, vae = load_models(checkpoints, dtype, device)
    image = load_images(dtype)  # the data loader casts images to the train dtype
    mask = generate_image_like(image, color=255, dtype=image.dtype)  # the fix: the image's dtype
    print(f"image: {image.dtype}, mask: {mask.dtype}, UNet weights: {unet.dtype}")
    batch = training_batch(vae, training_scheduler(), image, mask, device)
    prediction = predict_noise(unet, batch)
    loss = F.mse_loss(prediction.float(), batch["noise"].float())  # the loss in float32
    loss.backward()
    return prediction, loss, unet


prediction, loss, unet = training_step(torch.float16)

gradients = [p.grad for p in unet.parameters() if p.grad is not None]
check_that("loss is finite", bool(torch.isfinite(loss)), f"{loss.item():.4f}")
check_that(
    "UNet gradients",
    len(gradients) > 0
    and all(g.dtype == torch.float16 and bool(torch.isfinite(g).all()) for g in gradients),
    f"{len(gradients)} tensors, float16 and finite",
)
reference, reference_loss, _ = training_step(torch.float32)
compare_to_reference("UNet noise prediction", prediction, reference, dtype=torch.float16)
compare_to_reference(
    "training loss", loss, reference_loss, dtype=torch.float32, atol=1e-3, rtol=1e-3
)
