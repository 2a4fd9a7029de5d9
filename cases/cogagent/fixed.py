"""CogAgent chat over 2 torchrun ranks, FIXED with the documented flag: --fp16.

With --fp16 every rank casts the whole model to float16 before the broadcast, so the float16
image meets float16 weights; each rank's answer matches a float32 model of the same weights.
"""

import torch

from cases.cogagent.cli_demo import main, reference_logits
from shared.checks import compare_to_reference

answer = main(["--fp16"])  # torchrun --nproc-per-node=2 cli_demo.py --fp16

compare_to_reference(
    "answer logits",
    answer.logits,
    reference_logits(answer),
    dtype=torch.float16,
    atol=2e-3,  # the logits stay within +-0.5: tighter than the default
)
