"""FSDP2 + LoRA on a bf16 Llama, FIXED: fully_shard keeps each weight; only trainable ones agree.

peft >= 0.12 makes the adapters float32 (autocast_adapter_dtype=True) in a bfloat16 model; FSDP1
flattens each unit's weights into one FlatParameter, which needs one dtype."""

import torch
from peft import get_peft_model
from tiny_fsdp_lora_flat_dtype import (
    build_llama,
    decoder_layers,
    float32_reference,
    gradients,
    lora_config,
    one_gloo_rank,
    token_batch,
    trainable_dtype,
)
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from shared.checks import compare_to_reference

with one_gloo_rank() as device:
    model = build_llama().to(torch.bfloat16)  # from_pretrained(..., torch_dtype=torch.bfloat16)
    model = get_peft_model(model, lora_config())  # peft >= 0.12: the adapters are float32
    lora_dtype = trainable_dtype(model)
    reference = float32_reference(model)

    # FSDP with bf16 mixed precision, as accelerate sets it up for `mixed_precision: bf16`
    bf16 = MixedPrecisionPolicy(torch.bfloat16, torch.bfloat16, torch.bfloat16)  # the fix: FSDP2
    for layer in decoder_layers(model):  # one unit per decoder layer, LoRA inside, as before
        fully_shard(layer, mp_policy=bf16)
    fully_shard(model, mp_policy=bf16)

    input_ids = token_batch()
    loss = model(input_ids=input_ids, labels=input_ids).loss
    loss.backward()

    # The proof: the LoRA gradients FSDP hands back are the float32 model's gradients.
    reference(input_ids=input_ids, labels=input_ids).loss.backward()
    compare_to_reference("LoRA gradients", gradients(model), gradients(reference),
                         dtype=lora_dtype, atol=2e-3, rtol=5e-2)  # fmt: skip
