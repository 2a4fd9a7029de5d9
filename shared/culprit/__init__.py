"""Find where a dtype/device mismatch starts: audit a model's tensors, guard its calls.

- :func:`audit` / :func:`format_audit`: every submodule's own parameters and buffers grouped
  by (device, dtype), with the groups that differ from the rest of the model marked.
- :class:`MismatchGuard`: while active, checks each module call's tensor inputs against that
  module's own parameters, so the first module fed the wrong dtype or device is named before
  the error surfaces deep inside torch.
- :class:`NonFiniteGuard`: for a failure that raises nothing, the first module whose output
  became inf or NaN while its inputs were finite: the producer, not a passer-on.
- :func:`as_record`: a mismatch (or a non-finite producer) as a JSON-serialisable dict.
- :func:`hazards`, :func:`pipeline_hazards`, :func:`generator_hazards`,
  :func:`optimizer_hazards`: the patterns the gallery's cases document (``shared.hazards``),
  found in a model, a pipeline's components and generators, or an optimizer (one finder per
  hazard kind and subject, ``finders.REGISTRY``); :class:`OpWatch`, :class:`FlatParamWatch`,
  :class:`UnscaleWatch`, :class:`TrainingArgsWatch` (:class:`ProfileWatches`: those needing a
  profile function, under one) and :func:`seen_hazards`: those that show while it runs. Every
  watcher and guard lists what it saw as hazards in ``.found``.

Public torch APIs (module hooks, a TorchFunctionMode), and profile functions that read the
arguments of FSDP1's private FlatParamHandle, a GradScaler's per-optimizer stage and
transformers' TrainingArguments; nothing in
torch or the libraries is patched.

One job per module: ``audit`` (a model's tensors by device and dtype), ``guards`` (module-call
guards), ``finders`` (hazards in what a variant holds at its end), ``watchers`` (hazards seen
while it runs), ``tensors`` (the tensor and module helpers they share), ``diagnose`` (a whole
run), ``__main__`` (``python -m shared.culprit``). Cases import from here.
"""

from shared.culprit.audit import AuditRow, audit, format_audit
from shared.culprit.finders import (
    Hazard,
    format_hazards,
    generator_hazards,
    hazards,
    optimizer_hazards,
    pipeline_hazards,
)
from shared.culprit.guards import (
    DtypeDeviceMismatch,
    Mismatch,
    MismatchGuard,
    NonFinite,
    NonFiniteGradient,
    NonFiniteGuard,
    as_record,
)
from shared.culprit.watchers import (
    FlatParamWatch,
    OpWatch,
    ProfileWatches,
    TrainingArgsWatch,
    UnscaleWatch,
    seen_hazards,
)

__all__ = [
    "AuditRow",
    "DtypeDeviceMismatch",
    "FlatParamWatch",
    "Hazard",
    "Mismatch",
    "MismatchGuard",
    "NonFinite",
    "NonFiniteGradient",
    "NonFiniteGuard",
    "OpWatch",
    "ProfileWatches",
    "TrainingArgsWatch",
    "UnscaleWatch",
    "as_record",
    "audit",
    "format_audit",
    "format_hazards",
    "generator_hazards",
    "hazards",
    "optimizer_hazards",
    "pipeline_hazards",
    "seen_hazards",
]
