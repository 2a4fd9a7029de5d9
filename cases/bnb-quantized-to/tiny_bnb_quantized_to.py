"""What the bnb-quantized-to variants share: a tiny Llama checkpoint, its 4-bit load, a batch.

Real classes, tiny and seeded (``tiny_seed``); nothing is downloaded: ``LlamaForCausalLM``
(2 layers, hidden 64) saved with ``save_pretrained`` and loaded back through
``BitsAndBytesConfig(load_in_4bit=True)`` (NF4), the path of the upstream reports.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import BitsAndBytesConfig, LlamaForCausalLM

from shared.tiny_models import (
    quiet_hf_logging,
    save_pretrained_to_temp,
    tiny_llama_config,
    tiny_seed,
)

quiet_hf_logging()


def save_tiny_checkpoint() -> Path:
    """A tiny float32 Llama saved to a temporary folder; return the folder."""
    tiny_seed(0)
    config = tiny_llama_config()
    return save_pretrained_to_temp(LlamaForCausalLM(config))


def load_4bit(checkpoint: Path, device: torch.device, dtype: torch.dtype) -> LlamaForCausalLM:
    """The checkpoint quantized to 4-bit NF4 at load, the rest held and computed in ``dtype``."""
    quantization = BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype
    )
    return LlamaForCausalLM.from_pretrained(
        checkpoint,
        quantization_config=quantization,
        torch_dtype=dtype,
        device_map={"": str(device)},
    )


def example_input_ids(device: torch.device) -> torch.Tensor:
    """A batch of 2 sequences of 16 token ids, as a tokenizer gives it."""
    return torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(1)).to(device)


def dequantized_reference(model: LlamaForCausalLM, checkpoint: Path) -> LlamaForCausalLM:
    """The float32 reference for a 4-bit model: the checkpoint in float32 on the CPU, each
    quantized Linear's weight replaced by its 4-bit codes dequantized (bitsandbytes'
    ``dequantize_4bit``): the weights the 4-bit model holds, computed without its kernels."""
    import bitsandbytes as bnb

    reference = LlamaForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32)
    plain = dict(reference.named_modules())
    for name, module in model.named_modules():
        if isinstance(module, bnb.nn.Linear4bit):
            codes = module.weight
            weight = bnb.functional.dequantize_4bit(codes.data, codes.quant_state)
            plain[name].weight.data = weight.to("cpu", torch.float32)
    return reference.eval()
