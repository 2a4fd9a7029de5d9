"""FSDP2 full fine-tune of a bf16 Llama, BROKEN: the final norm is kept float32 and trainable.

fully_shard lets an FSDP unit hold frozen weights of another dtype, not trainable ones: the root
unit (embeddings, final norm, lm_head) mixes float32 and bfloat16 and fails at the first forward."""

import torch
from tiny_fsdp_lora_flat_dtype import (
    build_llama,
    decoder_layers,
    float32_reference,
    gradients,
    one_gloo_rank,
    token_batch,
)
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from shared.checks import compare_to_reference

with one_gloo_rank() as device:
    model = build_llama().to(torch.bfloat16)  # from_pretrained(..., torch_dtype=torch.bfloat16)
    model.model.norm.float()  # kept float32, as _keep_in_fp32_modules keeps some models' norms
    reference = float32_reference(model)

    # FSDP with bf16 mixed precision, set up as accelerate does (fsdp_version: 2)
    bf16 = MixedPrecisionPolicy(torch.bfloat16, torch.bfloat16, torch.bfloat16)
    for layer in decoder_layers(model):  # one unit per decoder layer
        fully_shard(layer, mp_policy=bf16)
    fully_shard(model, mp_policy=bf16)  # the root unit: embeddings, norm (float32), lm_head

    input_ids = token_batch()
    loss = model(input_ids=input_ids, labels=input_ids).loss  # raises at FSDP2's lazy init
    loss.backward()

    # The proof: the float32 norm's gradient is the float32 model's gradient.
    reference(input_ids=input_ids, labels=input_ids).loss.backward()
    compare_to_reference("final norm gradient", gradients(model.model.norm),
                         gradients(reference.model.norm), dtype=torch.float32, atol=2e-3,
                         rtol=5e-2)  # fmt: skip
