"""LoRA on an fp16 Llama (peft), BROKEN: autocast_adapter_dtype=False keeps the adapters float16
(peft < 0.12: the default), so GradScaler raises `Attempting to unscale FP16 gradients.`"""

import copy

import torch
from peft import get_peft_model
from tiny_lora_fp16_gradscaler import build_llama, llama_batch, llama_lora_config, trainable

from shared.checks import check_that, compare_to_reference, pick_device

device = pick_device()

model = build_llama().half().to(device)  # the base model in float16, to save memory
model = get_peft_model(model, llama_lora_config(), autocast_adapter_dtype=False)  # float16 LoRA

reference = copy.deepcopy(model).float()  # the same weights in float32, for the check below
lora = trainable(model)
print("LoRA weights:", sorted({str(p.dtype) for p in lora.values()}))
optimizer = torch.optim.AdamW(lora.values(), lr=1e-4)
scaler = torch.amp.GradScaler(device.type)  # what Trainer(fp16=True) uses on CUDA

input_ids = llama_batch(device)
loss = model(input_ids=input_ids, labels=input_ids).loss
scaler.scale(loss).backward()
scaler.unscale_(optimizer)  # as the Trainer does before clipping the gradients
before = {name: p.detach().clone() for name, p in lora.items()}
scaler.step(optimizer)
scaler.update()

# The proof: the unscaled gradients are the float32 model's gradients, and the step was taken.
reference(input_ids=input_ids, labels=input_ids).loss.backward()
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
