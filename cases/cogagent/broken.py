"""CogAgent chat over 2 torchrun ranks, BROKEN: launched without --fp16 / --bf16, as in #282."""

import torch
from cli_demo import main, reference_logits

from shared.checks import compare_to_reference

answer = main([])  # torchrun --nproc-per-node=2 cli_demo.py  (no precision flag)

compare_to_reference(
    "answer logits",
    answer.logits,
    reference_logits(answer),
    dtype=torch.float32,  # no flag: a float32 model, so float32 logits are what it should give
    atol=2e-3,  # the logits stay within +-0.5: tighter than the default
)
