"""The audit: every submodule's own parameters and buffers grouped by (device, dtype), the
groups that differ from the rest of the model marked; the dtype names the other parts share.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import torch
from torch import nn

from shared.culprit.tensors import dtype_name, is_floating

KEEP_IN_FP32_ATTRIBUTES = ("_keep_in_fp32_modules", "_keep_in_fp32_modules_strict")


# --- audit -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AuditRow:
    """The direct tensors of one submodule that share a kind, device and dtype."""

    module: str  # path as in model.named_modules(); "" is the model itself
    kind: str  # "param" or "buffer"
    device: str
    dtype: str
    names: tuple[str, ...]
    elements: int
    odd: bool = False  # (device, dtype) differs from the model's majority, for no stated reason
    note: str = ""  # what differs, and why when the model says so (_keep_in_fp32_modules)


def audit(model: nn.Module) -> list[AuditRow]:
    """One row per (submodule, param/buffer, device, dtype) over each submodule's own tensors.

    The majority is the (device, dtype) holding most floating-point elements. Rows differing
    from it are noted; integer tensors (token ids, counters) are judged by device only. Rows
    that are float32 where the model lists them in ``_keep_in_fp32_modules`` (transformers
    keeps those float32 on purpose) are noted as such, not marked odd.
    """
    groups: dict[tuple, list[tuple[str, torch.Tensor]]] = {}
    for path, module in model.named_modules():
        for kind, tensors in (
            ("param", module.named_parameters(recurse=False)),
            ("buffer", module.named_buffers(recurse=False)),
        ):
            for name, tensor in tensors:
                key = (path, kind, str(tensor.device), dtype_name(tensor.dtype))
                groups.setdefault(key, []).append((name, tensor))
    rows = [
        AuditRow(*key, tuple(name for name, _ in tensors), sum(t.numel() for _, t in tensors))
        for key, tensors in groups.items()
    ]
    most, kept_by = majority(rows), keep_in_fp32_entries(model)
    return [dataclasses.replace(row, **_judge(row, most, kept_by)) for row in rows]


def majority(rows: list[AuditRow]) -> tuple[str, str]:
    """The (device, dtype) with most floating-point elements (any elements if none)."""
    elements: Counter = Counter()
    for row in [row for row in rows if is_floating(row.dtype)] or rows:
        elements[row.device, row.dtype] += row.elements
    return elements.most_common(1)[0][0] if elements else ("-", "-")


def keep_in_fp32_entries(model: nn.Module) -> dict[str, str]:
    """Entry -> the attribute listing it, from the model and its PreTrainedModel parts."""
    entries = {}
    for module in model.modules():
        for attribute in KEEP_IN_FP32_ATTRIBUTES:
            entries.update(dict.fromkeys(getattr(module, attribute, None) or (), attribute))
    return entries


def _judge(row: AuditRow, most: tuple[str, str], kept_by: dict[str, str]) -> dict:
    """The row's ``odd`` and ``note``: what differs from the majority, and why if stated."""
    majority_device, majority_dtype = most
    what, model = [], []
    if is_floating(row.dtype) and row.dtype != majority_dtype:
        what.append(row.dtype)
        model.append(majority_dtype)
    if row.device != majority_device:
        what.append(f"on {row.device}")
        model.append(majority_device)
    if not what:
        return {}
    seen = f"{' '.join(what)} in a {' '.join(model)} model"
    # An entry names a module or tensor path: match it as whole dotted parts of every name.
    listed_in = {
        attribute
        for entry, attribute in kept_by.items()
        if all(f".{entry}." in f".{row.module}.{name}." for name in row.names)
    }
    if listed_in and row.dtype == "float32" and row.device == majority_device:
        return {"note": f"{seen}: kept float32 on purpose by {' and '.join(sorted(listed_in))}"}
    return {"odd": True, "note": f"odd: {seen}"}


def format_audit(model: nn.Module, odd_only: bool = False) -> str:
    """The audit as a text table; noted rows end with "<-- ...". ``odd_only``: noted rows."""
    rows = audit(model)
    total = sum(row.elements for row in rows)
    device, dtype = majority(rows)
    lines = [
        f"{type(model).__name__}: {total:,} elements in "
        f"{sum(len(row.names) for row in rows)} tensors, mostly {dtype} on {device}"
    ]
    if kept_by := keep_in_fp32_entries(model):
        for attribute in KEEP_IN_FP32_ATTRIBUTES:
            if listed := [entry for entry, by in kept_by.items() if by == attribute]:
                lines.append(f"{attribute}: {', '.join(listed)}")
    shown = [row for row in rows if row.note or not odd_only]
    header = ("module", "kind", "device", "dtype", "elements", "tensors")
    cells = [
        (row.module or "(root)", row.kind, row.device, row.dtype, f"{row.elements:,}",
         ", ".join(row.names))
        for row in shown
    ]  # fmt: skip
    widths = [max(len(cell[i]) for cell in [header, *cells]) for i in range(len(header))]
    for cell, row in zip([header, *cells], [None, *shown], strict=True):
        line = "  ".join(
            text.ljust(width) for text, width in zip(cell, widths, strict=True)
        ).rstrip()
        lines.append(f"{line}  <-- {row.note}" if row and row.note else line)
    odd = sum(row.odd for row in rows)
    lines.append(f"{odd} odd group{'s' * (odd != 1)} of {len(rows)}")
    return "\n".join(lines)
