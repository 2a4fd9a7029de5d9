"""FSDP1 + LoRA on a bf16 Llama, BROKEN: peft's wrap policy without autocast; fp32 meets bf16.

peft >= 0.12 makes the adapters float32 (autocast_adapter_dtype=True) in a bfloat16 model; FSDP1
flattens each unit's weights into one FlatParameter, which needs one dtype."""

import torch
from peft import get_peft_model
from peft.utils.other import fsdp_auto_wrap_policy
from tiny_fsdp_lora_flat_dtype import (
    bf16_mixed_precision,
    build_llama,
    float32_reference,
    gradients,
    lora_config,
    one_gloo_rank,
    token_batch,
    trainable_dtype,
)
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

from shared.checks import compare_to_reference

with one_gloo_rank() as device:
    model = build_llama().to(torch.bfloat16)  # from_pretrained(..., torch_dtype=torch.bfloat16)
    model = get_peft_model(model, lora_config())  # peft >= 0.12: the adapters are float32
    lora_dtype = trainable_dtype(model)
    reference = float32_reference(model)

    # FSDP with bf16 mixed precision, as accelerate sets it up for `mixed_precision: bf16`
    policy = fsdp_auto_wrap_policy(model)  # each trainable LoRA leaf its own unit
    model = FSDP(model, auto_wrap_policy=policy, mixed_precision=bf16_mixed_precision(),
                 use_orig_params=True, device_id=device)  # fmt: skip

    input_ids = token_batch()
    loss = model(input_ids=input_ids, labels=input_ids).loss
    loss.backward()

    # The proof: the LoRA gradients FSDP hands back are the float32 model's gradients.
    reference(input_ids=input_ids, labels=input_ids).loss.backward()
    compare_to_reference("LoRA gradients", gradients(model), gradients(reference),
                         dtype=lora_dtype, atol=2e-3, rtol=5e-2)  # fmt: skip
