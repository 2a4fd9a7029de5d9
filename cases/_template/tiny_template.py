"""The tiny model the variants share: built from a real library class, seeded, nothing downloaded.

Replace this with the smallest real model that reaches the failing library code (a
transformers / diffusers / peft class built from a small config). Import it from the variants
by its plain name (``from tiny_template import ...``): the harness and ``python
cases/<name>/broken.py`` both put the case's folder first on the import path.
"""

from __future__ import annotations

import torch

from shared.tiny_models import tiny_seed


def tiny_projector() -> torch.nn.Linear:
    """A float32 projection, as a checkpoint would load it."""
    tiny_seed(0)
    return torch.nn.Linear(8, 4)


def example_input() -> torch.Tensor:
    """What the caller feeds it: float32, as an image processor or a tokenizer gives it."""
    return torch.randn(2, 8, generator=torch.Generator().manual_seed(1))
