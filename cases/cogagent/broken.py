"""CogAgent chat over 2 torchrun ranks, BROKEN: launched without --fp16 / --bf16, as the user did.

Every rank builds the model in float32 (no precision flag, no cast) and takes rank 0's weights
by broadcast; the chat step still casts the image to float16, so each rank's BEiT patch
embedding (a float32 Conv2d with bias) gets a half input and every rank raises:
    RuntimeError: Input type (c10::Half) and bias type (float) should be the same
"""

import torch

from cases.cogagent.cli_demo import main, reference_logits
from shared.checks import compare_to_reference

answer = main([])  # torchrun --nproc-per-node=2 cli_demo.py  (no precision flag)

compare_to_reference(
    "answer logits",
    answer.logits,
    reference_logits(answer),
    dtype=torch.float16,
    atol=2e-3,  # the logits stay within +-0.5: tighter than the default
)
