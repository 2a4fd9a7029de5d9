"""The tensor and module helpers the culprit modules share: dtype names, the tensors a value
holds, a float 0/1 mask, and a module's path from the outermost live model holding it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import torch
from torch import nn

# The names torch uses for dtypes in its own errors ("got Float and BFloat16").
TORCH_ERROR_NAMES = {
    "float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16"
}  # fmt: skip
HALF_DTYPES = (torch.float16, torch.bfloat16, torch.complex32)


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float16`` as ``"float16"``."""
    return str(dtype).removeprefix("torch.")


def is_floating(dtype: str) -> bool:
    """Whether the dtype named ``dtype`` (as :func:`dtype_name` names it) is floating-point."""
    return getattr(torch, dtype).is_floating_point


def tensors_of(value) -> Iterator[torch.Tensor]:
    """The tensors of a module's input or output: a tensor, or one level into tuples, lists,
    dicts and ModelOutput-like objects."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        yield from (v for v in value.values() if isinstance(v, torch.Tensor))
    elif isinstance(value, (tuple, list)):
        yield from (v for v in value if isinstance(v, torch.Tensor))


def added_as_scores(mask: torch.Tensor) -> bool:
    """A float mask of 0 and 1: attention adds a float mask to its scores, so "keep" (1) and
    "drop" (0) become two offsets a step apart; a bool mask, or -inf for "drop", is applied."""
    if not mask.is_floating_point() or mask.numel() == 0:
        return False
    zeros, ones = mask == 0, mask == 1
    return bool((zeros | ones).all() and zeros.any() and ones.any())


def live_parents() -> dict[nn.Module, tuple[nn.Module, str]]:
    """Each live module's parent and its name there, from every module alive now."""
    parents: dict[nn.Module, tuple[nn.Module, str]] = {}
    for candidate in gc.get_objects():
        # type(), not isinstance(): no attribute lookups on arbitrary (deprecated) objects
        if issubclass(type(candidate), nn.Module):
            # read from its __dict__: a module whose __init__ never ran is alive too, without
            # _modules (a deep copy that raised half-way leaves one)
            for name, child in (vars(candidate).get("_modules") or {}).items():
                if child is not None:
                    parents.setdefault(child, (candidate, name))
    return parents


def full_path(module: nn.Module, parents: dict[nn.Module, tuple[nn.Module, str]]) -> str:
    """``module``'s path from the outermost live model holding it ("Model.block.0.wo")."""
    path, seen = [], {module}
    while module in parents and parents[module][0] not in seen:
        module, name = parents[module]
        path.insert(0, name)
        seen.add(module)
    return ".".join([type(module).__name__, *path])
