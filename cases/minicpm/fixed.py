"""MiniCPM-V-2 bf16 fine-tuning, FIXED: the whole model cast with model.to(dtype=torch.bfloat16)."""

import torch
from tiny_minicpmv import EMBEDDING_ATOL, TinyMiniCPMV, example_batch, save_tiny_checkpoint

from shared.checks import compare_to_reference, pick_device

device = pick_device()
checkpoint = save_tiny_checkpoint()  # tiny random weights, saved in float32

model = TinyMiniCPMV.from_pretrained(checkpoint, torch_dtype=torch.bfloat16)  # as upstream
model.to(device=device, dtype=torch.bfloat16)  # the fix: every parameter, the table too

# The root cause, visible before anything runs:
print("resampler.pos_embed:", model.resampler.pos_embed.dtype)
print("resampler.attn.in_proj_weight:", model.resampler.attn.in_proj_weight.dtype)

batch = example_batch(device)
embedding = model.get_vllm_embedding(batch)  # what the fine-tune's compute_loss calls first

reference = TinyMiniCPMV.from_pretrained(checkpoint, torch_dtype=torch.float32).to(device)
compare_to_reference(
    "vision+text embedding",
    embedding,
    reference.get_vllm_embedding(batch),
    dtype=torch.bfloat16,
    atol=EMBEDDING_ATOL,
)
