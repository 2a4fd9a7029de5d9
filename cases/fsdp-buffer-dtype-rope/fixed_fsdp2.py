"""FSDP2 with bf16 mixed precision, FIXED: fully_shard casts parameters, never buffers.

accelerate's FSDP1 policy for bf16 is MixedPrecision(bf16, bf16, buffer_dtype=bf16): FSDP casts
RoPE's inv_freq to bfloat16 at its lazy init, and the angles position * inv_freq drift with the
position: right at the start of the sequence, wrong at long positions."""

import torch
from tiny_fsdp_buffer_dtype_rope import (
    LONG,
    build_llama,
    example_input_ids,
    first_recorded,
    float32_reference,
    inv_freq_dtypes,
    one_gloo_rank,
    record_cos,
    record_logits,
)
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from shared.checks import compare_to_reference, measure_error

with one_gloo_rank() as device:
    model = build_llama()  # float32, as loaded for FSDP training
    reference = float32_reference(model)

    fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))  # the fix

    input_ids = example_input_ids()  # 3000 tokens
    cos, logits = record_cos(model), record_logits(model)
    with torch.no_grad():
        model(input_ids=input_ids)
    print("inv_freq after FSDP's lazy init:", inv_freq_dtypes(model))

    expected_cos, expected = record_cos(reference), record_logits(reference)
    with torch.no_grad():
        reference(input_ids=input_ids)
    # The documented symptom: RoPE's cos table (independent of the weights); the logits show it.
    cos, expected_cos = first_recorded(cos), first_recorded(expected_cos)
    compare_to_reference("RoPE cos at positions > 2000", cos[LONG:], expected_cos[LONG:],
                         dtype=torch.bfloat16, atol=0.01, rtol=0)  # fmt: skip
    logits, expected = first_recorded(logits), first_recorded(expected)
    measure_error("logits at positions < 100", logits[:100], expected[:100])
    measure_error("logits at positions > 2000", logits[LONG:], expected[LONG:])
