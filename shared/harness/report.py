"""The one format of what a run observed, from one process up to one case (JSON in and out).

- :class:`ProcessResult`: what one process (one rank) of a variant saw; the executor writes it,
  the runner reads it back.
- :class:`Outcome`: what happened to one variant's processes (or why it did not run).
- :class:`Verdict`: one variant's verdict with its evidence; a :class:`CaseReport` holds them.
- :class:`CaseReport`: one case's run (versions, devices, verdicts): ``.gallery/runs/<case>.json``,
  ``reports/cuda/<case>.json`` and ``reports/matrix/sets/<set>/<case>.json``; the CLI writes it,
  the matrix and the site read it.
- :class:`Bisection`: the first release of a library where one variant's verdict changes.

Paths inside a report are relative (to the repository, or to site-packages for library code):
a committed report never holds a machine's absolute path.
"""

from __future__ import annotations

import dataclasses
import json
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared.harness.paths import relative, relative_text
from shared.record import raised


@dataclass(frozen=True)
class ErrorRecord:
    """An exception a variant raised: type, message, and the frames it passed through."""

    type: str
    qualified_type: str
    message: str
    frames: tuple[str, ...] = ()  # "path:function", innermost last; paths relative
    # Raised in the gallery's own files (the case's folder, shared/), not in a library's.
    in_gallery: bool = False
    # Raised by the gallery's own steps around the script (after it ran: module paths, hazards),
    # its traceback never in the script, wherever its innermost frame lies.
    around_script: bool = False

    @classmethod
    def of(cls, exc: BaseException, gallery_dirs: tuple[Path, ...] = (),
           script: Path | None = None) -> ErrorRecord:  # fmt: skip
        return cls.from_raised(raised(exc), gallery_dirs, script)

    @classmethod
    def from_raised(cls, data: dict, gallery_dirs: tuple[Path, ...] = (),
                    script: Path | None = None) -> ErrorRecord:  # fmt: skip
        """From ``shared.record.raised``'s plain data (made in the process that raised);
        ``script``: the variant's script the executor ran."""
        frames = data["frames"]
        innermost = Path(frames[-1][0]).resolve() if frames else None
        return cls(
            type=data["type"],
            qualified_type=data["qualified_type"],
            message=relative_text(data["message"]),  # an ImportError names a file, for one
            frames=tuple(f"{relative(file)}:{function}" for file, function in frames),
            in_gallery=innermost is not None
            and any(innermost.is_relative_to(folder) for folder in gallery_dirs),
            around_script=script is not None and bool(frames)
            and script.resolve() not in {Path(file).resolve() for file, _ in frames},
        )

    @property
    def first_line(self) -> str:
        """``Type: first line of the message``, as a verdict line shows it."""
        lines = self.message.strip().splitlines()
        return f"{self.type}: {lines[0] if lines else ''}"

    @property
    def raise_site(self) -> str:
        """The innermost frame: where the check that fired lives."""
        return self.frames[-1] if self.frames else "?"


@dataclass(frozen=True)
class WarningRecord:
    """A warning the variant's code issued: category, message, and where it was attributed."""

    category: str
    message: str
    issued_at: str  # "path:lineno", relative

    @property
    def text(self) -> str:
        return f"{self.category}: {self.message}  [issued at {self.issued_at}]"


@dataclass
class ProcessResult:
    """What one process of a variant observed. Written as JSON by the executor."""

    status: str = "clean"  # "clean" or "raised"
    exception: ErrorRecord | None = None
    wall_s: float = 0.0
    device: str | None = None
    checks: list[dict] = field(default_factory=list)  # shared.checks.compare_to_reference ...
    measurements: list[dict] = field(default_factory=list)  # shared.checks.measure_*
    knobs: dict[str, float] = field(default_factory=dict)  # shared.tiny_models.knob / tiny_seed
    warnings: list[WarningRecord] = field(default_factory=list)
    rank: str | None = None
    culprit: dict | None = None  # shared.culprit.as_record of the first mismatch seen
    producer: dict | None = None  # the first module that produced inf/NaN (silent failures)
    hazards: list[dict] = field(default_factory=list)  # shared.culprit.hazards of its models
    diagnosis: dict | None = None  # what `python -m shared.culprit run` reports of the run
    # The setting it ran (shared.record.setting_of): its models' dtypes and quantized layers at
    # its end, the autocast it entered; a fix's must be its broken twin's (verdicts.judge).
    setting: dict = field(default_factory=dict)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(dataclasses.asdict(self), indent=2), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> ProcessResult:
        return _from_dict(cls, json.loads(path.read_text(encoding="utf-8")))

    def measurement(self, label: str) -> dict | None:
        """The last figure measured under ``label``."""
        return next((m for m in reversed(self.measurements) if m["label"] == label), None)


@dataclass
class Outcome:
    """What happened to one variant's process(es), or why it was not run; the verdict is
    decided from it (``shared.harness.verdicts.judge``)."""

    returncode: int | None = None
    timed_out: bool = False
    wall_s: float = 0.0
    log: str = ""
    results: list[ProcessResult] = field(default_factory=list)  # one per process (rank)
    ranks: int = 1  # processes that should each have written a result
    not_run: str = ""  # why the variant was not run here (a requirement unmet): SKIPPED

    @property
    def signal_name(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            return signal.Signals(-self.returncode).name
        return None


@dataclass
class Verdict:
    """One variant's verdict and the evidence behind it, as shown and as stored (its kinds and
    how it is made: ``shared.harness.verdicts``)."""

    kind: str
    detail: str
    variant: str = ""
    device: str = "-"
    seconds: float = 0.0
    note: str = ""
    silent: bool = False  # the documented failure raises nothing (a symptom, a warning)
    error: ErrorRecord | None = None
    warnings: list[WarningRecord] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)
    measurements: list[dict] = field(default_factory=list)
    knobs: dict[str, float] = field(default_factory=dict)  # the tiny model's arbitrary choices
    culprit: dict | None = None  # where the first dtype/device mismatch was seen (failures)
    producer: dict | None = None  # the first module whose output became inf/NaN (silent ones)
    hazards: list[dict] = field(default_factory=list)  # hazard patterns of its models at its end
    diagnosis: dict | None = None  # `python -m shared.culprit run`'s report of the run
    setting: dict = field(default_factory=dict)  # its models' dtypes, quantized layers, autocast
    output_tail: str = ""  # the last lines the variant printed: the evidence

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Verdict:
        """A verdict read back from its JSON form (one entry of a report's ``variants``)."""
        return _from_dict(cls, data)


@dataclass
class CaseReport:
    """One case's run: where and with what it ran, and each variant's verdict."""

    case: str
    title: str
    finished: str  # ISO 8601, UTC
    python: str
    versions: dict[str, str | None]
    cuda_devices: list[str]
    variants: list[Verdict]

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> CaseReport:
        return _from_dict(cls, json.loads(text))

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.case}.json"
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: Path) -> CaseReport:
        return cls.from_json(path.read_text(encoding="utf-8"))

    def verdict(self, variant: str) -> Verdict:
        return next(v for v in self.variants if v.variant == variant)


@dataclass
class Probe:
    """One release a bisection installed and ran."""

    version: str
    verdict: str  # the verdict kind, or "UNINSTALLABLE" when the stack did not resolve
    message: str = ""
    rerun: str = ""  # the verdict of the second run of a release whose verdict changed


@dataclass
class Bisection:
    """Where one variant's verdict changes along one library's releases, the rest held fixed."""

    case: str
    variant: str
    package: str
    base: str  # the library set held fixed around the package
    versions: dict[str, str | None]  # the other libraries, as installed
    releases: list[str]  # every release from good to bad, in order
    probes: list[Probe]
    verdict_before: str
    verdict_after: str
    last_before: str  # the last release with verdict_before ...
    first_changed: str  # ... and the first with verdict_after: adjacent releases
    flaky: bool  # a changed verdict that its second run did not repeat: nothing concluded
    installs: int
    seconds: float
    finished: str

    @property
    def file_name(self) -> str:
        return f"{self.case}--{self.variant}--{self.package}-{self.first_changed}.json"

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / self.file_name
        path.write_text(json.dumps(dataclasses.asdict(self), indent=2) + "\n", encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: Path) -> Bisection:
        return _from_dict(cls, json.loads(path.read_text(encoding="utf-8")))


_NESTED = {"exception": ErrorRecord, "error": ErrorRecord}


def _from_dict(cls, data: dict[str, Any]):
    """Build ``cls`` from its ``asdict`` form; unknown keys are an error, not ignored."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown field(s) {sorted(unknown)}")
    values = dict(data)
    for key, nested in _NESTED.items():
        if values.get(key) is not None:
            values[key] = nested(**{**values[key], "frames": tuple(values[key]["frames"])})
    if "warnings" in values:
        values["warnings"] = [WarningRecord(**w) for w in values["warnings"]]
    if "variants" in values:
        values["variants"] = [_from_dict(Verdict, v) for v in values["variants"]]
    if "probes" in values:
        values["probes"] = [_from_dict(Probe, p) for p in values["probes"]]
    return cls(**values)
