"""CogAgent chat over 2 torchrun ranks, FIXED with --fp16 (the flag for GPUs without bf16)."""

import torch
from cli_demo import main, reference_logits

from shared.checks import compare_to_reference

answer = main(["--fp16"])  # torchrun --nproc-per-node=2 cli_demo.py --fp16

compare_to_reference(
    "answer logits",
    answer.logits,
    reference_logits(answer),
    dtype=torch.float16,
    atol=2e-3,  # the logits stay within +-0.5: tighter than the default
)
