"""CogAgent chat as ONE process (no torchrun), BROKEN the same way: no --fp16 / --bf16.

Without torchrun's WORLD_SIZE the CLI runs single-process (as in CogVLM issue #360, CPU only):
no ranks, no broadcast, the same float32 model and float16 image, the same error:
    RuntimeError: Input type (c10::Half) and bias type (float) should be the same
The bug is the missing flag, not the multi-GPU launch.
"""

import torch

from cases.cogagent.cli_demo import main, reference_logits
from shared.checks import compare_to_reference

answer = main([])  # python cli_demo.py  (no precision flag)

compare_to_reference(
    "answer logits",
    answer.logits,
    reference_logits(answer),
    dtype=torch.float16,
    atol=2e-3,  # the logits stay within +-0.5: tighter than the default
)
