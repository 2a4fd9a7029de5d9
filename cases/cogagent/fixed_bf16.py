"""CogAgent chat over 2 torchrun ranks, FIXED with --bf16 (what every upstream README command used).

With --bf16 the model is cast to bfloat16 and the chat step casts the image to bfloat16 too;
each rank's answer matches a float32 model of the same weights (bfloat16 tolerance).
"""

import torch

from cases.cogagent.cli_demo import main, reference_logits
from shared.checks import compare_to_reference

answer = main(["--bf16"])  # torchrun --nproc-per-node=2 cli_demo.py --bf16

compare_to_reference(
    "answer logits",
    answer.logits,
    reference_logits(answer),
    dtype=torch.bfloat16,
    atol=1.5e-2,  # the logits stay within +-0.5: tighter than the default
)
