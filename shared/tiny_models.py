"""Tiny models: save one for ``from_pretrained``, and name the arbitrary choices it makes.

Loading through ``from_pretrained(..., dtype=...)`` matters: it is the real loading code whose
dtype handling (what gets cast, what stays float32) the cases are about.

A tiny model's seed, init scale or activation scale are arbitrary: a failure that raises
nothing must not hang on them. ``tiny_seed`` and ``knob`` name each such choice with its
realistic range; the test suite reruns every silent variant and every fix of one with
``GALLERY_PERTURB`` set to ``seed`` (another seed), ``low`` or ``high`` (every knob at that end of
its range) and asserts the same verdict.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

from shared.record import RECORD

PERTURB_VARIABLE = "GALLERY_PERTURB"
PERTURBATIONS = ("seed", "low", "high")
OTHER_SEED_OFFSET = 1009  # GALLERY_PERTURB=seed: every tiny_seed(n) becomes n + this


def perturbation(wanted: str) -> str:
    """``wanted`` if it names a perturbation: seed, low, high, or seed:N (every seed moved by N)."""
    if wanted and wanted not in PERTURBATIONS and not re.fullmatch(r"seed:\d+", wanted):
        raise ValueError(f"{PERTURB_VARIABLE} must be one of {PERTURBATIONS} or seed:N (every "
                         f"seed moved by N), got {wanted!r}")  # fmt: skip
    return wanted


def _perturbation() -> str:
    return perturbation(os.environ.get(PERTURB_VARIABLE, ""))


def _seed_offset() -> int:
    wanted = _perturbation()
    if wanted.startswith("seed:"):
        return int(wanted.removeprefix("seed:"))
    return OTHER_SEED_OFFSET if wanted == "seed" else 0


def tiny_seed(seed: int = 0) -> int:
    """Seed torch for a tiny model's random weights; return the seed used.

    ``seed`` as written, or another one under ``GALLERY_PERTURB=seed`` (``seed:N``: moved by N).
    """
    import torch

    seed += _seed_offset()
    RECORD["knobs"]["seed"] = seed
    torch.manual_seed(seed)
    return seed


def knob(name: str, default: float, realistic: tuple[float, float]) -> float:
    """An arbitrary tiny-model choice (init scale, activation scale) and its realistic range.

    Returns ``default``, or under ``GALLERY_PERTURB=low`` / ``high`` that end of ``realistic``.
    The value used is printed and recorded, so a verdict shows what it was measured at.
    """
    low, high = realistic
    if not low <= default <= high:
        raise ValueError(f"knob {name}: default {default} outside its realistic range {realistic}")
    value = {"low": low, "high": high}.get(_perturbation(), default)
    RECORD["knobs"][name] = value
    print(f"[knob] {name} = {value:g} (realistic {low:g} .. {high:g})")
    return value


# The diffusion cases' tiny AutoencoderKL: Stable Diffusion's layout (encoder and decoder blocks,
# 4 latent channels) at two blocks of 8 and 16 channels. AutoencoderKL(**TINY_VAE, sample_size=N).
TINY_VAE = {
    "block_out_channels": (8, 16),
    "down_block_types": ("DownEncoderBlock2D",) * 2,
    "up_block_types": ("UpDecoderBlock2D",) * 2,
    "layers_per_block": 1,
    "latent_channels": 4,
    "norm_num_groups": 4,
}


def tiny_llama_config(**overrides):
    """The tiny Llama several cases load, save or quantize (2 layers, hidden 64, 4 heads, 64
    tokens), with ``overrides`` over it."""
    from transformers import LlamaConfig

    sizes = dict(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=4,
                 max_position_embeddings=64)  # fmt: skip
    return LlamaConfig(**{**sizes, **overrides})


def long_rope_llama_config():
    """The RoPE cases' tiny Llama config (rope-bf16, fsdp-buffer-dtype-rope): one layer, 4096
    positions, so the angles at positions > 2000 show a rounded inv_freq."""
    from transformers import LlamaConfig

    # The weights' init std: real Llama checkpoints are built with 0.02; 0.3 makes attention
    # sharp enough for the logits to show the rotated angles (bfloat16 weights alone then stay
    # within 1 of float32). The symptom judged (the cos table) does not depend on it.
    initializer_range = knob("initializer_range", 0.3, (0.02, 0.3))
    return LlamaConfig(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        initializer_range=initializer_range,
    )


def save_pretrained_to_temp(model) -> Path:
    """Save ``model`` (a PreTrainedModel / ModelMixin) to a temporary folder and return it.

    The folder is removed when the process exits; the harness also points ``tempfile`` at a
    per-run folder that it removes itself.
    """
    folder = Path(tempfile.mkdtemp(prefix="gallery-checkpoint-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    model.save_pretrained(folder)
    return folder


def sub_config(config_class, value):
    """A composite config's part from a config object or the dict config.json gives back."""
    return value if isinstance(value, config_class) else config_class(**(value or {}))


def quiet_hf_logging() -> None:
    """No progress bars or load reports in the variants' output: only the evidence."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
