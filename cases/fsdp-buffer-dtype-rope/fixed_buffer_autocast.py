"""FSDP1 with accelerate's bf16 policy, FIXED: buffer_autocast=True keeps the buffers float32.

Parameters and reductions stay bfloat16; RoPE's inv_freq stays float32, so its angles
position * inv_freq are right at every position (only the cos/sin tables are rounded)."""

import torch
from accelerate import FullyShardedDataParallelPlugin
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
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

from shared.checks import check_that, compare_to_reference, measure_error

with one_gloo_rank() as device:
    model = build_llama()  # float32, as loaded for FSDP training
    reference = float32_reference(model)

    plugin = FullyShardedDataParallelPlugin()  # accelerate's FSDP plugin (fsdp_version 1)
    plugin.set_mixed_precision("bf16")  # what AcceleratorState does for mixed_precision: bf16
    plugin.set_mixed_precision("bf16", buffer_autocast=True, override=True)  # the fix
    print("FSDP1 buffer_dtype:", plugin.mixed_precision_policy.buffer_dtype)
    model = FSDP(model, mixed_precision=plugin.mixed_precision_policy, device_id=device)

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
