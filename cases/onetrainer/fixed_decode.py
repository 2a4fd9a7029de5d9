"""OneTrainer float16 inpainting training, debug images, FIXED: alphas_cumprod in the VAE dtype."""

import torch
from tiny_inpainting import (
    generate_image_like,
    load_images,
    load_models,
    predict_noise,
    save_tiny_models,
    training_batch,
    training_scheduler,
)

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoints = save_tiny_models()  # tiny random weights, saved in float32


def debug_images(dtype: torch.dtype) -> torch.Tensor:
    """A training step's prediction in ``dtype``, decoded into the images it predicts."""
    unet, vae = load_models(checkpoints, dtype, device)
    image = load_images(dtype)
    mask = generate_image_like(image, color=255, dtype=image.dtype)  # mask fixed: training runs
    scheduler = training_scheduler()
    batch = training_batch(vae, scheduler, image, mask, device)
    with torch.no_grad():
        predicted_noise = predict_noise(unet, batch)
        alphas_cumprod = scheduler.alphas_cumprod.to(device, vae.dtype)  # the fix: VAE dtype
        print(f"noise prediction: {predicted_noise.dtype}, alphas_cumprod: {alphas_cumprod.dtype}")
        alpha = alphas_cumprod[batch["timesteps"]].reshape(-1, 1, 1, 1)
        noisy = batch["noisy_latent"]
        predicted_latent = (noisy - (1 - alpha).sqrt() * predicted_noise) / alpha.sqrt()
        return vae.decode(predicted_latent / vae.config.scaling_factor).sample


images = debug_images(torch.float16)
reference = debug_images(torch.float32)
compare_to_reference("debug images", images, reference, dtype=torch.float16, atol=2e-2, rtol=0)
