"""LoRA on an fp16 UNet (diffusers), FIXED: cast_training_params makes the LoRA weights float32,
so GradScaler unscales float32 gradients."""

import copy

import torch
import torch.nn.functional as F
from diffusers.training_utils import cast_training_params
from tiny_lora_fp16_gradscaler import build_unet, trainable, unet_batch, unet_lora_config

from shared.checks import check_that, compare_to_reference, pick_device

device = pick_device()
weight_dtype = torch.float16  # train_text_to_image_lora.py with --mixed_precision=fp16

unet = build_unet()
unet.requires_grad_(False)  # only the adapter trains
unet.to(device, dtype=weight_dtype)  # the frozen base in float16, to save memory
unet.add_adapter(unet_lora_config())  # the LoRA weights take the base's dtype: float16
cast_training_params(unet, dtype=torch.float32)  # the fix: trainable weights to float32

reference = copy.deepcopy(unet).float()  # the same weights in float32, for the check below
lora = trainable(unet)
print("LoRA weights:", sorted({str(p.dtype) for p in lora.values()}))
optimizer = torch.optim.AdamW(lora.values(), lr=1e-4)
scaler = torch.amp.GradScaler(device.type)  # what accelerate's fp16 mode uses

batch = unet_batch(device, weight_dtype)
inputs = (batch["noisy_latents"], batch["timesteps"], batch["encoder_hidden_states"])
loss = F.mse_loss(unet(*inputs).sample.float(), batch["target"])
scaler.scale(loss).backward()
scaler.unscale_(optimizer)  # as accelerator.clip_grad_norm_ does before clipping
before = {name: p.detach().clone() for name, p in lora.items()}
scaler.step(optimizer)
scaler.update()

# The proof: the unscaled gradients are the float32 model's gradients, and the step was taken.
float_inputs = [x.float() if x.is_floating_point() else x for x in inputs]
F.mse_loss(reference(*float_inputs).sample, batch["target"]).backward()
ref_lora = trainable(reference)
compare_to_reference(
    "LoRA gradients after unscale_",
    torch.cat([p.grad.flatten() for p in lora.values()]),
    torch.cat([p.grad.flatten() for p in ref_lora.values()]),
    dtype=torch.float32,
    atol=1e-4,
    rtol=1e-2,
)
stepped = [n for n, p in lora.items() if p.grad.any() and not torch.equal(p, before[n])]
with_grad = [n for n, p in lora.items() if p.grad.any()]
check_that("scaler.step", stepped == with_grad, f"{len(stepped)} of {len(with_grad)} LoRA "
           "weights with a gradient updated")  # fmt: skip
