"""FSDP2 with bf16 mixed precision, FIXED: fully_shard casts parameters, never buffers.

MixedPrecisionPolicy has no buffer_dtype: RoPE's inv_freq stays float32, so its angles
position * inv_freq are right at every position (only the cos/sin tables are rounded)."""

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

from shared.checks import check_that, compare_to_reference, measure_error

with one_gloo_rank() as device:
    model = build_llama()  # float32, as loaded for FSDP training
    reference = float32_reference(model)

    bf16 = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
    fully_shard(model, mp_policy=bf16)  # the fix: FSDP2, which has no buffer_dtype

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
    error = measure_error("RoPE cos at positions > 2000", cos[LONG:], expected_cos[LONG:])
    check_that("RoPE cos table", error < 0.01, f"max abs error {error:.2g} < 0.01 (bf16 rounding)")
    logits, expected = first_recorded(logits), first_recorded(expected)
    measure_error("logits at positions < 100", logits[:100], expected[:100])
    compare_to_reference("logits at positions > 2000", logits[LONG:], expected[LONG:],
                         dtype=torch.bfloat16, atol=1.5, rtol=0)  # fmt: skip
