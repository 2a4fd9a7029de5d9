"""SD 1.5 in float16 with a text encoder loaded on its own, BROKEN: float32 latents, fp16 UNet."""

import torch
from diffusers import StableDiffusionPipeline
from tiny_pipeline_component_dtype import generate, reference_image, save_tiny_sd
from transformers import CLIPTextModel

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_sd()  # tiny random SD 1.5, saved in float32
reference = reference_image(StableDiffusionPipeline, checkpoint, device, torch.float16)

text_encoder = CLIPTextModel.from_pretrained(checkpoint, subfolder="text_encoder")  # float32
pipe = StableDiffusionPipeline.from_pretrained(
    checkpoint, text_encoder=text_encoder, tokenizer=None, torch_dtype=torch.float16
)  # no tokenizer: the prompt comes as embeddings
pipe = pipe.to(device)
print("UNet:", pipe.unet.dtype, "| text encoder:", pipe.text_encoder.dtype)

# float16 embeddings: encode_prompt casts them to the text encoder's float32, the latents follow
image = generate(pipe, torch.float16)  # raises in the UNet's time embedding
compare_to_reference("image", image, reference, dtype=torch.float16)
