"""Helpers a variant calls: pick the device, prove a fixed variant right, measure a symptom.

Each helper prints what it did, so a variant read top to bottom shows its evidence, and adds
it to ``shared.record.RECORD`` so the harness can put it in the verdict line.

- ``compare_to_reference`` / ``check_that``: a fixed variant's proof (raise when wrong).
- ``measure_*``: a broken variant that raises nothing measures its symptom here (never raises);
  the case's ``case.toml`` says which figure, above or below what, *is* the documented failure,
  and the harness judges it. A case script never decides its own symptom.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os

import torch

from shared.record import RECORD

# Default (atol, rtol) for comparing a low-precision output with its float32 reference.
# Loose enough for a few layers of accumulated rounding, tight enough to catch a wrong model.
DEFAULT_TOLERANCE = {
    torch.float32: (1e-5, 1e-5),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),
}


def pick_device() -> torch.device:
    """CUDA when available (where the failures were documented), else the CPU."""
    if torch.cuda.is_available():
        return record_device(torch.device("cuda"), torch.cuda.get_device_name(0))
    return record_device(torch.device("cpu"), "no CUDA device visible")


def without_cuda() -> torch.device:
    """The CPU of a host where torch sees no CUDA (a CPU-only wheel, or no GPU), on any machine:
    a visible GPU is hidden first, which holds only before anything initialised CUDA (a case
    about such a host calls this before its model is built)."""
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    if torch.cuda.is_available():
        raise RuntimeError(
            "gallery: without_cuda() came after CUDA was initialised in this process: the GPU "
            "stays visible; call it before anything asks torch for a device"
        )
    build = (
        f"torch {torch.__version__}, built with CUDA {torch.version.cuda}, CUDA available: False"
    )
    return record_device(torch.device("cpu"), build)


def record_device(device: torch.device, reason: str) -> torch.device:
    """Say which device the variant runs on, and why; the verdict line shows it."""
    RECORD["device"] = device.type
    print(f"[device] {device.type} ({reason})")
    return device


def check_dtype(label: str, tensor: torch.Tensor, dtype: torch.dtype) -> None:
    """Fail unless ``tensor`` has ``dtype``: a fix that silently upcasts is not the fix."""
    if tensor.dtype != dtype:
        raise AssertionError(f"{label}: expected dtype {dtype}, got {tensor.dtype}")


def compare_to_reference(
    label: str,
    output: torch.Tensor,
    reference: torch.Tensor,
    *,
    dtype: torch.dtype,
    atol: float | None = None,
    rtol: float | None = None,
) -> float:
    """Check ``output`` has ``dtype`` and is close to the float32 ``reference``.

    Returns the max absolute error. Raises AssertionError (the variant then fails, and the
    harness reports FIX-FAILED) when the dtype is wrong or the values are not close.
    """
    check_dtype(label, output, dtype)
    if reference.dtype != torch.float32:
        raise AssertionError(f"{label}: the reference must be float32, got {reference.dtype}")
    default_atol, default_rtol = DEFAULT_TOLERANCE[dtype]
    atol = default_atol if atol is None else atol
    rtol = default_rtol if rtol is None else rtol
    actual = output.detach().float().cpu()
    expected = reference.detach().cpu()
    max_abs_err = (actual - expected).abs().max().item()
    RECORD["checks"].append(
        {
            "label": label,
            "dtype": str(dtype).removeprefix("torch."),
            "max_abs_err": max_abs_err,
            "atol": atol,
            "rtol": rtol,
        }
    )
    print(
        f"[check] {label}: {RECORD['checks'][-1]['dtype']} output, max abs error "
        f"{max_abs_err:.2e} vs float32 reference (atol {atol:g}, rtol {rtol:g})"
    )
    torch.testing.assert_close(
        actual, expected, atol=atol, rtol=rtol, msg=lambda m: f"{label}: {m}"
    )
    return max_abs_err


def check_that(label: str, ok: bool, detail: str) -> None:
    """Record a non-numeric check (e.g. 'only LoRA weights changed'); raise if it fails."""
    RECORD["checks"].append({"label": label, "detail": detail})
    print(f"[check] {label}: {detail} -> {'ok' if ok else 'FAILED'}")
    if not ok:
        raise AssertionError(f"{label}: {detail}")


# --- symptoms of failures that raise nothing ---------------------------------------------------


def _measure(label: str, measure: str, value: float, detail: str) -> float:
    RECORD["measurements"].append(
        {"label": label, "measure": measure, "value": value, "detail": detail}
    )
    print(f"[measure] {label}: {measure} = {value:.4g} ({detail})")
    return value


def measure_error(label: str, output: torch.Tensor, reference: torch.Tensor) -> float:
    """Max absolute error of ``output`` against its float32 ``reference`` (NaN counts as inf)."""
    if reference.dtype != torch.float32:
        raise AssertionError(f"{label}: the reference must be float32, got {reference.dtype}")
    difference = (output.detach().float().cpu() - reference.detach().cpu()).abs()
    error = difference.nan_to_num(nan=float("inf")).max().item()
    scale = reference.detach().abs().max().item()
    detail = f"{str(output.dtype).removeprefix('torch.')} output vs float32 reference, "
    return _measure(label, "max_abs_err", error, detail + f"reference max |x| {scale:.3g}")


def measure_nan(label: str, tensor: torch.Tensor) -> float:
    """Fraction of the elements of ``tensor`` that are NaN (0.0 .. 1.0)."""
    values = tensor.detach()
    fraction = values.isnan().float().mean().item()
    detail = f"{int(values.isnan().sum())} of {values.numel()} elements NaN"
    return _measure(label, "nan_fraction", fraction, detail)


def measure_inf(label: str, tensor: torch.Tensor) -> float:
    """Fraction of the elements of ``tensor`` that are +inf or -inf (0.0 .. 1.0): an overflow."""
    values = tensor.detach()
    fraction = values.isinf().float().mean().item()
    detail = f"{int(values.isinf().sum())} of {values.numel()} elements inf"
    return _measure(label, "inf_fraction", fraction, detail)


def measure_changed(
    label: str,
    before: dict[str, torch.Tensor],
    after: dict[str, torch.Tensor],
    unit: str = "tensors",
) -> float:
    """Fraction of the named tensors whose values changed between two snapshots (0.0 .. 1.0).

    ``unit`` names what the entries are in the printed count ("weights" for single elements).
    """
    if set(before) != set(after) or not before:
        raise AssertionError(f"{label}: the snapshots must name the same, non-empty tensors")
    changed = [name for name in before if not torch.equal(before[name], after[name])]
    detail = f"{len(changed)} of {len(before)} {unit} changed"
    return _measure(label, "changed_fraction", len(changed) / len(before), detail)


@dataclasses.dataclass
class LinearOutputs:
    """What a model's nn.Linear layers computed: their output dtypes, and the logits (its
    ``lm_head``'s output) of the first forward: the precision a trainer really ran."""

    dtypes: set[torch.dtype] = dataclasses.field(default_factory=set)
    first_logits: torch.Tensor | None = None

    def names(self) -> list[str]:
        return sorted(str(dtype).removeprefix("torch.") for dtype in self.dtypes)


@contextlib.contextmanager
def linear_outputs(model: torch.nn.Module):
    """Yield a LinearOutputs that fills while the block runs (forward hooks, removed after)."""
    seen = LinearOutputs()
    head = getattr(model, "lm_head", None)

    def record(module: torch.nn.Module, _inputs, output: torch.Tensor) -> None:
        seen.dtypes.add(output.dtype)
        if module is head and seen.first_logits is None:
            seen.first_logits = output.detach()

    linears = [module for module in model.modules() if isinstance(module, torch.nn.Linear)]
    hooks = [module.register_forward_hook(record) for module in linears]
    try:
        yield seen
    finally:
        for hook in hooks:
            hook.remove()
