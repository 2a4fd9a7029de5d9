"""CogAgent chat over 2 torchrun ranks, FIXED with --bf16 (as every upstream README command)."""

import torch
from cli_demo import main, reference_logits

from shared.checks import compare_to_reference

answer = main(["--bf16"])  # torchrun --nproc-per-node=2 cli_demo.py --bf16

compare_to_reference(
    "answer logits",
    answer.logits,
    reference_logits(answer),
    dtype=torch.bfloat16,
    atol=1.5e-2,  # the logits stay within +-0.5: tighter than the default
)
