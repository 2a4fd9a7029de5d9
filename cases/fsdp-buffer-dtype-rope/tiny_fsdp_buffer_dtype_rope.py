"""What the fsdp-buffer-dtype-rope variants share: one gloo rank, a tiny Llama, what RoPE ran.

Real classes, tiny and randomly initialised (seeded); nothing is downloaded:
- ``LlamaForCausalLM`` (1 decoder layer, hidden 64, 4 heads of 16, vocabulary 256) in float32,
  as a training script loads it for FSDP, and 3000 seeded token ids. RoPE rotates query and key
  by the angle ``position * inv_freq``; ``inv_freq`` is a float32 buffer the model computes
  when it is built. Rounded to bfloat16 (8 significant bits) each frequency moves by up to
  0.4 %, so the angle at position 3000 is off by up to half a radian.
  ``max_position_embeddings=4096``: the 3000 tokens fit the cos/sin tables transformers < 4.38
  cached at init.
- one FSDP rank: a gloo process group of world size 1 on the CPU, set up in this process with
  the variables ``torchrun --nproc-per-node=1`` would set. FSDP casts the buffers at its lazy
  init, before the first forward, the same on one CPU rank as on each GPU rank.
"""

from __future__ import annotations

import copy

import torch
from transformers import LlamaForCausalLM

from shared.distributed import one_gloo_rank as gloo_rank
from shared.tiny_models import long_rope_llama_config, quiet_hf_logging, tiny_seed

quiet_hf_logging()

SEQ_LEN = 3000  # tokens in the example input
LONG = 2000  # positions from here on are "long": where a rounded inv_freq shows


def one_gloo_rank():
    """One gloo CPU rank, as `accelerate launch` exports an FSDP config with
    fsdp_sync_module_states: false (accelerate < 1.0 reads only this variable, defaults it to
    true, and then wants a GPU)."""
    return gloo_rank(FSDP_SYNC_MODULE_STATES="false")


def build_llama() -> LlamaForCausalLM:
    """The tiny Llama in float32, seeded, in eval mode (no dropout: comparable to a reference)."""
    tiny_seed(0)
    config = long_rope_llama_config()
    return LlamaForCausalLM(config).eval()


def float32_reference(model: LlamaForCausalLM) -> LlamaForCausalLM:
    """A float32 copy of the model, made before FSDP takes it: the reference run."""
    return copy.deepcopy(model)


def example_input_ids() -> torch.Tensor:
    """SEQ_LEN random token ids (seeded), batch of one."""
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, 256, (1, SEQ_LEN), generator=generator)


def rotary_embeddings(model: torch.nn.Module) -> list[torch.nn.Module]:
    """Every RoPE module inside ``model`` (wrapped by FSDP or not), each with an inv_freq buffer.

    One per attention layer up to transformers 4.42, one on ``LlamaModel`` from 4.48, both in
    the releases between (of which only the model's runs): hook them all.
    """
    found = [
        module
        for module in model.modules()
        if type(module).__name__.endswith("RotaryEmbedding") and hasattr(module, "inv_freq")
    ]
    if not found:
        raise LookupError(f"no RotaryEmbedding module with inv_freq in {type(model).__name__}")
    return found


def inv_freq_dtypes(model: torch.nn.Module) -> str:
    """The dtype(s) of RoPE's ``inv_freq`` buffers, for the printout."""
    return ", ".join(sorted({str(m.inv_freq.dtype) for m in rotary_embeddings(model)}))


def record_cos(model: torch.nn.Module) -> list[torch.Tensor]:
    """A list that receives the cos table (SEQ_LEN x head_dim) each time RoPE runs.

    RoPE returns ``(cos, sin)``: (seq, head_dim) up to transformers 4.37, (batch, seq,
    head_dim) from 4.38; the last SEQ_LEN rows of either are the table of the input.
    """
    tables: list[torch.Tensor] = []

    def hook(module, args, output):
        cos = output[0] if isinstance(output, (tuple, list)) else output
        tables.append(cos.reshape(-1, cos.shape[-1])[-SEQ_LEN:].detach())

    for module in rotary_embeddings(model):
        module.register_forward_hook(hook)
    return tables


def record_logits(model: torch.nn.Module) -> list[torch.Tensor]:
    """A list that receives what ``lm_head`` computes, in the dtype it computed it.

    (The model's ``.logits`` hold the same values; transformers 4.x upcast them to float32.)
    """
    outputs: list[torch.Tensor] = []
    lm_head = next(m for name, m in model.named_modules() if name.endswith("lm_head"))
    lm_head.register_forward_hook(lambda module, args, output: outputs.append(output.detach()))
    return outputs


def first_recorded(recorded: list[torch.Tensor]) -> torch.Tensor:
    """The first table or logits recorded, one row per position."""
    if not recorded:
        raise RuntimeError("the hooked module never ran: nothing was recorded")
    return recorded[0].reshape(-1, recorded[0].shape[-1])
