"""What the onetrainer variants share: a tiny SD-1.5-inpainting look-alike and its data step.

Real diffusers classes, tiny and randomly initialised (seeded), saved with ``save_pretrained``:
- ``UNet2DConditionModel`` with 9 input channels, as an inpainting UNet takes them:
  noisy latent (4) + mask (1) + latent of the masked image (4);
- ``AutoencoderKL`` (16x16 RGB image <-> 4x8x8 latent);
- a ``DDPMScheduler`` for training and a ``DDIMScheduler`` for few-step sampling.
The text encoder is left out: a fixed random tensor in the model dtype stands in for its output.

The data step re-creates what the trainer's data pipeline does: images are made into tensors
the way torchvision's ``ToTensor`` does it (uint8 HWC -> float32 CHW / 255; torchvision is not
installed, so it is written out here with numpy) and cast to the train dtype, and a mask
"like" the image is generated as a white single-channel PIL image converted the same way.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from diffusers import AutoencoderKL, DDIMScheduler, DDPMScheduler, UNet2DConditionModel
from diffusers.utils import logging as diffusers_logging
from PIL import Image

from shared.tiny_models import TINY_VAE, quiet_hf_logging, save_pretrained_to_temp

IMAGE_SIZE = 16  # pixels; the VAE halves it: 8x8 latents
BATCH = 2
TEXT_TOKENS, TEXT_DIM = 4, 8
TRAINING_TIMESTEPS = (100, 400)  # one per sample of the batch
SAMPLING_STEPS = 4
SCHEDULER_CONFIG = dict(  # Stable Diffusion 1.5's noise schedule
    num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear"
)

quiet_hf_logging()
diffusers_logging.set_verbosity_error()
diffusers_logging.disable_progress_bar()


def save_tiny_models() -> dict[str, Path]:
    """Build the tiny UNet and VAE in float32 with fixed seeds; save each with save_pretrained."""
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=IMAGE_SIZE // 2,
        in_channels=9,  # noisy latent + mask + masked-image latent: an inpainting UNet
        out_channels=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        block_out_channels=(8, 16),
        layers_per_block=1,
        norm_num_groups=4,
        cross_attention_dim=TEXT_DIM,
        attention_head_dim=4,
    )
    vae = AutoencoderKL(
        **TINY_VAE,
        sample_size=IMAGE_SIZE,
    )
    return {"unet": save_pretrained_to_temp(unet), "vae": save_pretrained_to_temp(vae)}


def load_models(checkpoints: dict[str, Path], dtype: torch.dtype, device: torch.device):
    """Load the UNet and the VAE with every weight in ``dtype``, as the trainer loads them.

    ``torch_dtype`` is the keyword every diffusers release takes (0.42 also takes ``dtype``).
    """
    unet = UNet2DConditionModel.from_pretrained(checkpoints["unet"], torch_dtype=dtype)
    vae = AutoencoderKL.from_pretrained(checkpoints["vae"], torch_dtype=dtype)
    return unet.to(device), vae.to(device)


def training_scheduler() -> DDPMScheduler:
    return DDPMScheduler(**SCHEDULER_CONFIG)


def sampling_scheduler() -> DDIMScheduler:
    scheduler = DDIMScheduler(**SCHEDULER_CONFIG, set_alpha_to_one=False, steps_offset=1)
    scheduler.set_timesteps(SAMPLING_STEPS)
    return scheduler


def to_tensor_like_torchvision(image: Image.Image) -> torch.Tensor:
    """torchvision's ``ToTensor`` for a uint8 PIL image: HWC -> CHW, / 255, float32."""
    array = np.asarray(image, dtype=np.uint8)
    if array.ndim == 2:  # "L" images have no channel axis
        array = array[:, :, None]
    return torch.from_numpy(array.copy()).permute(2, 0, 1).float().div(255)


def load_images(dtype: torch.dtype) -> torch.Tensor:
    """The training images (seeded RGB noise), in [-1, 1] and cast to the train dtype, CPU."""
    rng = np.random.default_rng(1)
    pictures = [
        Image.fromarray(rng.integers(0, 256, (IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8))
        for _ in range(BATCH)
    ]
    pixels = torch.stack([to_tensor_like_torchvision(picture) for picture in pictures])
    return (pixels * 2 - 1).to(dtype)


def generate_image_like(image: torch.Tensor, color: int, dtype: torch.dtype | None = None):
    """A plain single-channel image per sample, the size of ``image`` (GenerateImageLike).

    Made as a PIL image and converted like ``ToTensor``: float32 unless ``dtype`` is given,
    whatever the dtype of ``image`` (the data-pipeline node had no dtype before the fix).
    """
    height, width = image.shape[-2:]
    plain = Image.new("L", (width, height), color=color)
    mask = torch.stack([to_tensor_like_torchvision(plain) for _ in range(image.shape[0])])
    return mask.to(device=image.device) if dtype is None else mask.to(image.device, dtype)


def inpainting_mask_image() -> Image.Image:
    """The mask a sample is drawn with: white (repaint) square in the middle, black around."""
    mask = Image.new("L", (IMAGE_SIZE, IMAGE_SIZE), color=0)
    mask.paste(255, (3, 3, IMAGE_SIZE - 3, IMAGE_SIZE - 3))
    return mask


def text_embeddings(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Stand-in for the text encoder's output, made in the model dtype (as the encoder's is)."""
    generator = torch.Generator().manual_seed(2)
    return torch.randn(BATCH, TEXT_TOKENS, TEXT_DIM, generator=generator).to(device, dtype)


def seeded_noise(like: torch.Tensor, seed: int) -> torch.Tensor:
    """The same standard-normal draw for every dtype: made in float32, then cast."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(like.shape, generator=generator).to(like.device, like.dtype)


@torch.no_grad()
def encode(vae: AutoencoderKL, images: torch.Tensor) -> torch.Tensor:
    """Scaled latents of ``images`` (the distribution's mode: deterministic)."""
    return vae.encode(images).latent_dist.mode() * vae.config.scaling_factor


def scale_to_latent(mask: torch.Tensor, latent: torch.Tensor) -> torch.Tensor:
    """The mask at latent resolution: bilinear without antialias (no fp16 antialias on CPU)."""
    return F.interpolate(mask, size=latent.shape[-2:], mode="bilinear", antialias=False)


def training_batch(
    vae: AutoencoderKL,
    scheduler: DDPMScheduler,
    image: torch.Tensor,
    mask: torch.Tensor,
    device: torch.device,
) -> dict[str, torch.Tensor]:
    """From data to model inputs, as the trainer does it for an inpainting model.

    The batch moves to the device with its dtypes kept, as a data loader moves it.
    """
    image, mask = image.to(device), mask.to(device)
    latent = encode(vae, image)
    noise = seeded_noise(latent, seed=3)
    timesteps = torch.tensor(TRAINING_TIMESTEPS, device=device)
    return {
        "noise": noise,
        "timesteps": timesteps,
        "noisy_latent": scheduler.add_noise(latent, noise, timesteps),
        "latent_mask": scale_to_latent(mask, latent),
        "masked_latent": encode(vae, image * (mask < 0.5)),
        "text": text_embeddings(latent.dtype, device),
    }


def predict_noise(unet: UNet2DConditionModel, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The inpainting UNet's input is the three latents concatenated on the channel axis."""
    unet_input = torch.cat(
        [batch["noisy_latent"], batch["latent_mask"], batch["masked_latent"]], dim=1
    )  # torch.cat promotes: one float32 part makes the whole input float32
    return unet(unet_input, batch["timesteps"], encoder_hidden_states=batch["text"]).sample


def check_model_inputs(unet: UNet2DConditionModel, batch: dict[str, torch.Tensor]) -> None:
    """The dtype check at the data -> model boundary: name the input in the wrong dtype."""
    wrong = {
        name: tensor.dtype
        for name, tensor in batch.items()
        if tensor.is_floating_point() and tensor.dtype != unet.dtype
    }
    if wrong:
        listed = ", ".join(f"{name} is {dtype}" for name, dtype in wrong.items())
        raise TypeError(f"model inputs must be {unet.dtype} like the UNet's weights: {listed}")


def sample_and_decode(
    unet: UNet2DConditionModel,
    vae: AutoencoderKL,
    latent_mask: torch.Tensor,
    masked_latent: torch.Tensor,
) -> torch.Tensor:
    """A few DDIM steps from seeded noise, then the VAE decode: the sampled images."""
    scheduler = sampling_scheduler()
    text = text_embeddings(masked_latent.dtype, masked_latent.device)
    latents = seeded_noise(masked_latent, seed=4) * scheduler.init_noise_sigma
    with torch.no_grad():
        for timestep in scheduler.timesteps:
            unet_input = torch.cat(
                [scheduler.scale_model_input(latents, timestep), latent_mask, masked_latent], dim=1
            )
            noise = unet(unet_input, timestep, encoder_hidden_states=text).sample
            latents = scheduler.step(noise, timestep, latents).prev_sample
        return vae.decode(latents / vae.config.scaling_factor).sample


def relative_l2(output: torch.Tensor, reference: torch.Tensor) -> float:
    """||output - reference|| / ||reference||, in float32."""
    difference = output.detach().float().cpu() - reference.detach().cpu()
    return (difference.norm() / reference.detach().cpu().norm()).item()
