"""The one function that judges what a variant did against what it is documented to do
(:func:`judge`), and the facts it judges on (:class:`Platform`, :func:`skip_reason`).

The kinds it gives are ``shared.harness.kinds``'s; what a variant is documented to do (its
``Expectation``) is ``shared.harness.case``'s. A new way of observing an expectation is a
change here (and to its test).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import re
from dataclasses import dataclass

from shared.harness.case import (
    SILENT_FAILURES,
    Expectation,
    Requirements,
    Variant,
    unmet_version,
)
from shared.harness.kinds import (
    ANOMALIES,
    CRASHED,
    FIX_FAILED,
    NOT_REPRODUCED,
    PASSED,
    REPRODUCED,
    SKIPPED,
    TIMEOUT,
    UNAFFECTED,
    WRONG_ERROR,
)
from shared.harness.libraries import VERSIONED_PACKAGES
from shared.harness.paths import relative_text
from shared.harness.report import ErrorRecord, Outcome, ProcessResult, Verdict

OUTPUT_TAIL_LINES = 15
GALLERY_FAILED = "the gallery's code failed here, not the library: "


@dataclass(frozen=True)
class Platform:
    """The facts requirements and version-dependent expectations are judged against."""

    versions: dict[str, str | None]
    cuda_device_names: tuple[str, ...] = ()

    @classmethod
    def installed(cls, cuda_device_names: tuple[str, ...] = ()) -> Platform:
        """This interpreter's versions of the packages case.toml conditions name."""
        versions = {name: installed_version(name) for name in VERSIONED_PACKAGES}
        return cls(versions, cuda_device_names)

    @property
    def cuda_devices(self) -> int:
        return len(self.cuda_device_names)

    @property
    def default_device(self) -> str:
        return "cuda" if self.cuda_devices else "cpu"

    def version(self, name: str) -> str | None:
        """A recorded version, else (a package only some variants import) the installed one."""
        if name in self.versions:
            return self.versions[name]
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None


def installed_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def skip_reason(requires: Requirements, platform: Platform, device: str = "") -> str | None:
    """Why a variant cannot run here (on ``device``, default: the platform's), or None."""

    def why(requirement: str) -> str:
        reason = requires.reason_for(requirement)
        return f" ({reason})" if reason else ""

    if requires.gpus > 1 and platform.cuda_devices < requires.gpus:
        return f"needs {requires.gpus} CUDA GPUs, found {platform.cuda_devices}{why('cuda')}"
    if requires.cuda and not platform.cuda_devices:
        return f"needs CUDA, no CUDA device here{why('cuda')}"
    tables = [("packages", "")]
    if (device or platform.default_device) == "cpu":
        tables.append(("cpu_packages", " on the CPU"))
    for table, where in tables:
        for name, spec in getattr(requires, table).items():
            unmet = unmet_version({name: spec}, {name: platform.version(name)})
            if unmet:
                return f"{unmet}{where}{why(f'{table}:{name}')}"
    return None


def judge(
    variant: Variant, outcome: Outcome, platform: Platform, twin: Outcome | None = None
) -> Verdict:
    """The one place a verdict is made: every kind, SKIPPED included (never a pass: it always
    says why the variant did not run). ``twin``: the outcome of the broken variant a fixed one
    fixes (its ``fixes``), whose setting a fix must have run (:func:`setting_mismatch`)."""
    verdict = _judge(variant, outcome, platform, twin)
    verdict.variant = variant.name
    return verdict


def _judge(variant: Variant, outcome: Outcome, platform: Platform, twin: Outcome | None) -> Verdict:
    if outcome.not_run:
        return Verdict(SKIPPED, outcome.not_run)
    if outcome.timed_out:
        return _verdict(
            TIMEOUT,
            f"no result within {variant.timeout:g} s; stopped it and every process it started",
            outcome,
        )
    if len(outcome.results) < outcome.ranks:
        how = (
            f"died by {outcome.signal_name}"
            if outcome.signal_name
            else f"exited with code {outcome.returncode}"
        )
        return _verdict(
            CRASHED,
            f"{how} before writing a result ({len(outcome.results)} of {outcome.ranks})",
            outcome,
        )
    twins = twin.results if twin and not twin.not_run else []
    verdicts = [
        _judge_one(variant, result, outcome, platform, twins[rank] if rank < len(twins) else None)
        for rank, result in enumerate(outcome.results)
    ]
    if len(verdicts) == 1:
        return verdicts[0]
    return _combine_ranks(verdicts)


def _judge_one(
    variant: Variant,
    result: ProcessResult,
    outcome: Outcome,
    platform: Platform,
    twin: ProcessResult | None,
) -> Verdict:
    device = result.device or platform.default_device
    expectation = variant.expectation_for(platform.versions, device)
    kind, detail = _observe(expectation, result)
    mismatch = setting_mismatch(variant, result, twin) if kind == PASSED else ""
    if mismatch:
        kind, detail = FIX_FAILED, mismatch
    if (
        kind in (PASSED, UNAFFECTED, REPRODUCED)
        and result.exception is None
        and outcome.ranks == 1
        and outcome.returncode not in (0, None)
    ):
        kind, detail = CRASHED, f"recorded a clean run, then exited with code {outcome.returncode}"
    verdict = _verdict(kind, detail, outcome, result, expectation, device)
    verdict.silent = expectation.expect in SILENT_FAILURES and kind == REPRODUCED
    return verdict


def setting_mismatch(variant: Variant, result: ProcessResult, twin: ProcessResult | None) -> str:
    """Why a fixed variant did not run the setting its broken twin fails in, or "": a fix that
    passes by dropping the risky thing (the half weights, the quantized layers, autocast) fixes
    nothing. Each model both hold under one name (a variable's, or "(Class)" for one only
    called; a float32 reference only one of them builds is left out) and the autocast entered:
    the twin's facts minus what ``fix_changes`` says the fix drops must remain, and nothing
    beyond what it says the fix adds may appear. Not judged without the twin's record (a run
    by hand, a twin that did not run or recorded nothing)."""
    theirs, ours = (twin.setting if twin else {}), result.setting
    if not (theirs.get("models") or theirs.get("autocast")):
        return ""
    compared = {"autocast": (theirs.get("autocast", []), ours.get("autocast", []))}
    their_models, our_models = theirs.get("models", {}), ours.get("models", {})
    shared_names = [name for name in their_models if name in our_models]
    for name in shared_names:
        compared[f"`{name}`"] = (their_models[name], our_models[name])
    adds, drops = variant.setting_changes
    changes = []
    for what, (before, after) in compared.items():
        dropped = sorted(set(before) - set(after) - drops)
        added = sorted(set(after) - set(before) - adds)
        if dropped or added:
            change = [f"drops {fact}" for fact in dropped] + [f"adds {fact}" for fact in added]
            changes.append(f"{what} {', '.join(change)} ({', '.join(before) or 'none'} -> "
                           f"{', '.join(after) or 'none'})")  # fmt: skip
    if not changes:
        return ""
    return (
        f"ran another setting than {variant.fixes}, the variant it fixes: {'; '.join(changes)}. "
        "A fix must run what its broken twin fails in; case.toml's fix_changes says what the "
        "fix itself changes"
    )


def _observe(expectation: Expectation, result: ProcessResult) -> tuple[str, str]:
    """(verdict kind, detail) for one process's result under its expectation."""
    error = result.exception
    expect = expectation.expect
    if expect == "error":
        if error is None:
            return NOT_REPRODUCED, f"ran clean; expected {_expected_error(expectation)}"
        problem = _error_mismatch(expectation, error, result.culprit)
        if problem:
            return WRONG_ERROR, _blame(error) + (
                f"got {error.first_line} {problem}; expected {_expected_error(expectation)}"
            )
        return REPRODUCED, f"{error.first_line}  [raised in {error.raise_site}]"
    if error is not None:
        wrong = FIX_FAILED if expect == "pass" else WRONG_ERROR
        return wrong, _blame(error) + f"raised {error.first_line}  [raised in {error.raise_site}]"
    if expect == "pass":
        if not result.checks:
            return FIX_FAILED, (
                "ran clean but checked nothing: a fixed variant must compare its output with a "
                "float32 reference (shared.checks.compare_to_reference) or check_that(...)"
            )
        return PASSED, "; ".join(_check_text(check) for check in result.checks)
    if expect == "symptom":
        return _observe_symptom(expectation, result, present=REPRODUCED, absent=NOT_REPRODUCED)
    if expect == "warning":
        return _observe_warning(expectation, result, present=REPRODUCED, absent=NOT_REPRODUCED)
    # absent: a failing variant, on versions where its failure is documented not to happen
    if expectation.symptom:
        return _observe_symptom(expectation, result, present=NOT_REPRODUCED, absent=UNAFFECTED)
    if expectation.warning:
        return _observe_warning(expectation, result, present=NOT_REPRODUCED, absent=UNAFFECTED)
    return UNAFFECTED, "ran clean: the failure does not happen on these versions, as documented"


def _observe_symptom(
    expectation: Expectation, result: ProcessResult, *, present: str, absent: str
) -> tuple[str, str]:
    measured = result.measurement(expectation.symptom)
    if measured is None:
        return WRONG_ERROR, (
            f"raised nothing and measured no {expectation.symptom!r}: the symptom must be "
            "measured by shared.checks.measure_*"
        )
    figure = (
        f"{measured['label']}: {measured['measure']} {measured['value']:.3g} "
        f"({measured['detail']}); failure is {expectation.threshold_text}"
    )
    if expectation.symptom_present(measured["value"]):
        return present, f"raises nothing: {figure}"
    return absent, f"no symptom: {figure}"


def _observe_warning(
    expectation: Expectation, result: ProcessResult, *, present: str, absent: str
) -> tuple[str, str]:
    matching = [
        seen
        for seen in result.warnings
        if seen.category == expectation.warning
        and expectation.message_matches(seen.message)
        and (not expectation.issued_in or re.search(expectation.issued_in, seen.issued_at))
    ]
    if matching:
        return present, f"raises nothing, warns {matching[0].text}"
    wanted = f"{expectation.warning} matching {_patterns(expectation)}"
    if expectation.issued_in:
        wanted += f" issued in /{expectation.issued_in}/"
    others = "; ".join(seen.text for seen in result.warnings[:3]) or "no warning at all"
    return absent, f"ran clean without {wanted} (saw: {others})"


def _blame(error: ErrorRecord) -> str:
    """Say so when an unexpected error came from the gallery's own code (a tiny model, a hook,
    a keyword spelling), not from the library: a defect of the gallery, never a verdict on the
    library. Not blamed: a RuntimeError (what torch's native ops raise, and their innermost
    Python frame may be the gallery's line that called them), and a check that fails (an
    AssertionError from shared/checks.py: the fix failing). Always blamed: an error its
    traceback shows raised by the gallery's own steps around the script."""
    if error.around_script:
        return GALLERY_FAILED
    if not error.in_gallery or error.type == "RuntimeError":
        return ""
    if error.type == "AssertionError" and error.raise_site.startswith("shared/checks.py:"):
        return ""
    return GALLERY_FAILED


def _error_mismatch(expectation: Expectation, error: ErrorRecord, culprit: dict | None) -> str:
    if expectation.error not in (error.type, error.qualified_type):
        return f"(type {error.type}, not {expectation.error})"
    if not expectation.message_matches(error.message):
        return "(message does not match)"
    if expectation.raised_in and not any(
        re.search(expectation.raised_in, frame) for frame in error.frames
    ):
        return f"(not raised in {expectation.raised_in!r}, but in {error.raise_site})"
    if expectation.culprit:
        module = (culprit or {}).get("module", "")
        if not re.search(expectation.culprit, module):
            return f"(culprit {module or 'none found'}, documented /{expectation.culprit}/)"
    return ""


def _combine_ranks(verdicts: list[Verdict]) -> Verdict:
    kinds = {v.kind for v in verdicts}
    first = verdicts[0]
    if len(kinds) == 1:
        return dataclasses.replace(first, detail=f"all {len(verdicts)} ranks: {first.detail}")
    worst = next((v for v in verdicts if v.kind in ANOMALIES), None)
    per_rank = "; ".join(f"rank {i}: {v.kind} {v.detail}" for i, v in enumerate(verdicts))
    if worst is None:  # every rank as documented, but not the same: not what the case says
        worst = dataclasses.replace(first, kind=WRONG_ERROR)
    return dataclasses.replace(worst, detail=f"ranks disagree: {per_rank}")


def _verdict(
    kind: str,
    detail: str,
    outcome: Outcome,
    result: ProcessResult | None = None,
    expectation: Expectation | None = None,
    device: str = "-",
) -> Verdict:
    result = result or ProcessResult()
    return Verdict(
        kind=kind,
        detail=detail,
        device=device,
        seconds=outcome.wall_s,
        note=expectation.note if expectation else "",
        error=result.exception,
        warnings=result.warnings,
        checks=result.checks,
        measurements=result.measurements,
        knobs=result.knobs,
        culprit=result.culprit if (result.exception or kind in ANOMALIES) else None,
        producer=result.producer,
        hazards=result.hazards,
        diagnosis=result.diagnosis,
        setting=result.setting,
        output_tail=relative_text(
            "\n".join(outcome.log.rstrip().splitlines()[-OUTPUT_TAIL_LINES:])
        ),
    )


def _patterns(expectation: Expectation) -> str:
    return " or ".join(f"/{p}/" for p in expectation.messages)


def _expected_error(expectation: Expectation) -> str:
    return f"{expectation.error} matching {_patterns(expectation)}"


def _check_text(check: dict) -> str:
    if "max_abs_err" in check:
        return (
            f"{check['label']}: {check['dtype']}, max abs err {check['max_abs_err']:.1e} "
            f"vs fp32 (atol {check['atol']:g})"
        )
    return f"{check['label']}: {check['detail']}"
