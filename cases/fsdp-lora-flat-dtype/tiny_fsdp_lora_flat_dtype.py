"""What the fsdp-lora-flat-dtype variants share: one gloo rank, a tiny Llama, its LoRA, the check.

Real classes, tiny and randomly initialised (seeded); nothing is downloaded:
- ``LlamaForCausalLM`` (2 decoder layers, hidden 32, vocabulary 64) with LoRA r=4 on ``q_proj`` /
  ``v_proj``, as the upstream reports configure it (direct-preference-optimization#90,
  axolotl#1494);
- one FSDP rank: a gloo process group of world size 1 on the CPU, set up in this process with
  the variables ``torchrun --nproc-per-node=1`` would set. FSDP validates and flattens the
  parameters when it wraps the model, before any kernel runs, so one CPU rank meets the same
  checks as one rank per GPU (with one rank FSDP1 switches to ``NO_SHARD``, which still builds
  a FlatParameter per wrapped module);
- FSDP1's settings as accelerate builds them for ``mixed_precision: bf16`` and
  ``fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP`` with ``LlamaDecoderLayer``.
"""

from __future__ import annotations

import copy
import functools

import torch
from peft import LoraConfig
from transformers import LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

from shared.distributed import one_gloo_rank as gloo_rank
from shared.tiny_models import quiet_hf_logging, tiny_llama_config, tiny_seed

quiet_hf_logging()

VOCAB, BATCH, TOKENS = 64, 2, 8
WRAPPED_LAYER = "LlamaDecoderLayer"  # accelerate's fsdp_transformer_layer_cls_to_wrap
FSDP_WRAPPER_PREFIX = "_fsdp_wrapped_module."  # FSDP1 inserts it into parameter names


def one_gloo_rank():
    """One gloo CPU rank; accelerate launch exports the config's layer class for peft's
    fsdp_auto_wrap_policy."""
    return gloo_rank(FSDP_TRANSFORMER_CLS_TO_WRAP=WRAPPED_LAYER)


def build_llama() -> LlamaForCausalLM:
    """A tiny Llama in float32, seeded (the variants cast it to bfloat16, as users load it)."""
    tiny_seed(0)
    config = tiny_llama_config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        # Training keeps no KV cache: the SFT recipes set model.config.use_cache = False (the
        # Trainer's gradient checkpointing turns it off too). With it on, transformers < 4.44
        # builds a DynamicCache (a dataclass) that FSDP2's input cast rebuilds empty per layer.
        use_cache=False,
    )
    return LlamaForCausalLM(config).eval()  # eval: no dropout, the reference is comparable


def lora_config() -> LoraConfig:
    """LoRA on the attention's q and v projections, as the upstream reports configure it."""
    return LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")


def decoder_layer_policy():
    """accelerate's TRANSFORMER_BASED_WRAP: one FSDP unit per decoder layer (LoRA included)."""
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

    layers = {LlamaDecoderLayer}
    return functools.partial(transformer_auto_wrap_policy, transformer_layer_cls=layers)


def bf16_mixed_precision():
    """accelerate's FSDP1 ``mixed_precision: bf16``: parameters, reductions and buffers bf16."""
    from torch.distributed.fsdp import MixedPrecision

    return MixedPrecision(torch.bfloat16, torch.bfloat16, torch.bfloat16)


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The decoder layers, found by class (a PeftModel nests them at a depth that varies)."""
    return [module for module in model.modules() if isinstance(module, LlamaDecoderLayer)]


def token_batch() -> torch.Tensor:
    """Token ids, used as the labels too (causal LM loss)."""
    return torch.randint(0, VOCAB, (BATCH, TOKENS), generator=torch.Generator().manual_seed(1))


def float32_reference(model: torch.nn.Module) -> torch.nn.Module:
    """The same (already rounded) weights in float32, made before FSDP takes the model."""
    return copy.deepcopy(model).float()


def trainable_dtype(model: torch.nn.Module) -> torch.dtype:
    """The dtype of the trainable weights (one dtype: the variants check it)."""
    dtypes = {p.dtype for p in model.parameters() if p.requires_grad}
    print("trainable weights:", sorted(str(d) for d in dtypes))
    if len(dtypes) != 1:
        raise AssertionError(f"expected one trainable dtype, got {sorted(map(str, dtypes))}")
    return dtypes.pop()


def gradients(model: torch.nn.Module) -> torch.Tensor:
    """The trainable weights' gradients, flattened in parameter-name order.

    Names lose FSDP1's wrapper prefix; FSDP2's sharded gradients (DTensor) are gathered.
    """
    grads = {}
    for name, param in model.named_parameters():
        if param.requires_grad:
            grad = param.grad
            if grad is None:
                raise AssertionError(f"{name}: no gradient after backward")
            if hasattr(grad, "full_tensor"):  # FSDP2: a DTensor
                grad = grad.full_tensor()
            grads[name.replace(FSDP_WRAPPER_PREFIX, "")] = grad.flatten()
    return torch.cat([grads[name] for name in sorted(grads)])
