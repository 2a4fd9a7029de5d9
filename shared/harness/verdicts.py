"""Turn what a variant did (its Outcome) and what it should do (its Expectation) into a verdict.

REPRODUCED and PASSED are the documented behaviour. SKIPPED is neither a pass nor a failure and
is always shown with its reason. Everything else is an anomaly and fails the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shared.harness.catalog import Expectation, Requirements, Variant
from shared.harness.runner import Outcome

REPRODUCED, PASSED, SKIPPED = "REPRODUCED", "PASSED", "SKIPPED"
WRONG_ERROR, NOT_REPRODUCED, FIX_FAILED = "WRONG-ERROR", "NOT-REPRODUCED", "FIX-FAILED"
TIMEOUT, CRASHED = "TIMEOUT", "CRASHED"
EXPECTED_KINDS = (REPRODUCED, PASSED)
ANOMALIES = (WRONG_ERROR, NOT_REPRODUCED, FIX_FAILED, TIMEOUT, CRASHED)
LOG_TAIL_LINES = 15


@dataclass
class Verdict:
    kind: str
    detail: str
    device: str = "-"
    seconds: float = 0.0
    note: str = ""
    error: dict | None = None  # the exception seen, as recorded by the executor
    checks: list[dict] = field(default_factory=list)
    culprit: dict | None = None  # where the first dtype/device mismatch was seen (failures only)
    log_tail: str = ""

    @property
    def is_anomaly(self) -> bool:
        return self.kind in ANOMALIES


@dataclass(frozen=True)
class Platform:
    """The facts requirements and version-dependent expectations are judged against."""

    versions: dict[str, str | None]
    cuda_device_names: tuple[str, ...] = ()

    @property
    def cuda_devices(self) -> int:
        return len(self.cuda_device_names)

    @property
    def default_device(self) -> str:
        return "cuda" if self.cuda_devices else "cpu"


def skip_reason(requires: Requirements, platform: Platform, device: str = "") -> str | None:
    """Why a variant cannot run here (on ``device``, default: the platform's), or None."""
    why = f" ({requires.reason})" if requires.reason else ""
    if requires.gpus > 1 and platform.cuda_devices < requires.gpus:
        return f"needs {requires.gpus} CUDA GPUs, found {platform.cuda_devices}{why}"
    if requires.cuda and not platform.cuda_devices:
        return f"needs CUDA, no CUDA device here{why}"
    unmet = _unmet(requires.packages, platform.versions)
    if unmet:
        return unmet
    if (device or platform.default_device) == "cpu":
        unmet = _unmet(requires.cpu_packages, platform.versions)
        if unmet:
            return f"{unmet} on the CPU{why}"
    return None


def _unmet(packages: dict, versions: dict[str, str | None]) -> str | None:
    for name, spec in packages.items():
        version = versions.get(name)
        if version is None or not spec.contains(version, prereleases=True):
            return f"needs {name}{spec}, found {version or 'none'}"
    return None


def judge(variant: Variant, outcome: Outcome, platform: Platform) -> Verdict:
    if outcome.timed_out:
        return _verdict(
            TIMEOUT,
            f"no result within {variant.timeout:g} s; killed it and every process it started",
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
    verdicts = [_judge_one(variant, result, outcome, platform) for result in outcome.results]
    if len(verdicts) == 1:
        return verdicts[0]
    return _combine_ranks(verdicts, outcome)


def _judge_one(variant: Variant, result: dict, outcome: Outcome, platform: Platform) -> Verdict:
    device = result.get("device") or platform.default_device
    expectation = variant.expectation_for(platform.versions, device)
    error = result.get("exception")

    def verdict(kind: str, detail: str) -> Verdict:
        return _verdict(kind, detail, outcome, result, expectation, device)

    if expectation.expect == "error":
        if error is None:
            return verdict(NOT_REPRODUCED, f"ran clean; expected {_expected_text(expectation)}")
        problem = _mismatch(expectation, error)
        if problem:
            return verdict(
                WRONG_ERROR,
                f"got {_error_text(error)} {problem}; expected {_expected_text(expectation)}",
            )
        return verdict(REPRODUCED, f"{_error_text(error)}  [raised in {_raise_site(error)}]")
    if error is not None:
        return verdict(FIX_FAILED, _error_text(error))
    if not result.get("checks"):
        return verdict(
            FIX_FAILED,
            "ran clean but checked nothing: a fixed variant must compare its output with a "
            "float32 reference (shared.checks.compare_to_reference) or check_that(...)",
        )
    if outcome.ranks == 1 and outcome.returncode not in (0, None):
        return verdict(CRASHED, f"recorded a clean run, then exited with code {outcome.returncode}")
    return verdict(PASSED, "; ".join(_check_text(check) for check in result["checks"]))


def _mismatch(expectation: Expectation, error: dict) -> str:
    if expectation.error not in (error["type"], error["qualified_type"]):
        return f"(type {error['type']}, not {expectation.error})"
    if not expectation.message_matches(error["message"]):
        return "(message does not match)"
    if expectation.raised_in and not any(
        re.search(expectation.raised_in, frame) for frame in error["frames"]
    ):
        return f"(not raised in {expectation.raised_in!r}, but in {_raise_site(error)})"
    return ""


def _combine_ranks(verdicts: list[Verdict], outcome: Outcome) -> Verdict:
    kinds = {v.kind for v in verdicts}
    first = verdicts[0]
    if len(kinds) == 1:
        return _replace_detail(first, f"all {len(verdicts)} ranks: {first.detail}")
    worst = next(v for v in verdicts if v.is_anomaly) if kinds & set(ANOMALIES) else first
    per_rank = "; ".join(f"rank {i}: {v.kind} {v.detail}" for i, v in enumerate(verdicts))
    return _replace_detail(worst, f"ranks disagree: {per_rank}")


def _replace_detail(verdict: Verdict, detail: str) -> Verdict:
    verdict.detail = detail
    return verdict


def _verdict(
    kind: str,
    detail: str,
    outcome: Outcome,
    result: dict | None = None,
    expectation: Expectation | None = None,
    device: str = "-",
) -> Verdict:
    result = result or {}
    tail = "\n".join(outcome.log.rstrip().splitlines()[-LOG_TAIL_LINES:])
    return Verdict(
        kind=kind,
        detail=detail,
        device=device,
        seconds=outcome.wall_s,
        note=expectation.note if expectation else "",
        error=result.get("exception"),
        checks=result.get("checks", []),
        culprit=result.get("culprit") if result.get("exception") else None,
        log_tail=tail if kind in ANOMALIES else "",
    )


def _error_text(error: dict) -> str:
    message = error["message"].strip().splitlines()[0] if error["message"].strip() else ""
    return f"{error['type']}: {message}"


def _expected_text(expectation: Expectation) -> str:
    patterns = " or ".join(f"/{p}/" for p in expectation.messages)
    return f"{expectation.error} matching {patterns}"


def _raise_site(error: dict) -> str:
    """The innermost frame, with the site-packages prefix cut: where the check fired."""
    if not error["frames"]:
        return "?"
    path, _, function = error["frames"][-1].rpartition(":")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{path}:{function}"


def _check_text(check: dict) -> str:
    if "max_abs_err" in check:
        return (
            f"{check['label']}: {check['dtype']}, max abs err {check['max_abs_err']:.1e} "
            f"vs fp32 (atol {check['atol']:g})"
        )
    return f"{check['label']}: {check['detail']}"
