"""What the harness would say of a variant run by hand (``python cases/<case>/<variant>.py``).

``shared.record`` runs ``python -m shared.harness.by_hand`` when such a run ends: the variant is
judged against its ``case.toml`` on the installed versions, as the harness judges it, and the
learner reads one line: the documented failure shown (with its figure), the failure absent on these
versions (and where it exists), the fix matching float32, or what is not as documented.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from shared.harness.case import CaseError, Variant
from shared.harness.catalog import load_case
from shared.harness.lines import PREFIX, by_hand_line
from shared.harness.paths import relative, relative_text
from shared.harness.report import (
    ErrorRecord,
    Outcome,
    ProcessResult,
    Verdict,
    WarningRecord,
)
from shared.harness.verdicts import Platform, judge, skip_reason


def verdict_line(
    script: Path, record: dict, raised: dict | None, cuda_device_names: tuple[str, ...] = ()
) -> str:
    """The line a run by hand ends with: ``record`` is what it recorded, ``raised`` its
    exception (``shared.record.raised``), on a machine with these CUDA devices."""
    script = script.resolve()
    try:
        case = load_case(script.parent.name, script.parent.parent)
    except CaseError as exc:
        return f"{PREFIX} none: {exc}"
    variant = next((v for v in case.variants if v.script.resolve() == script), None)
    if variant is None:
        return f"{PREFIX} none: {script.name} is no variant of {case.name}'s case.toml"
    platform = Platform.installed(cuda_device_names)
    reason = skip_reason(variant.requires, platform)
    if reason:
        return by_hand_line(
            case.name, variant, judge(variant, Outcome(not_run=reason), platform), platform
        )
    result = ProcessResult(
        status="raised" if raised else "clean",
        exception=ErrorRecord.from_raised(raised, (script.parent,)) if raised else None,
        device=record["device"],
        checks=record["checks"],
        measurements=record["measurements"],
        knobs=record["knobs"],
        warnings=[
            WarningRecord(category, relative_text(message), f"{relative(filename)}:{lineno}")
            for category, message, filename, lineno in record["warnings"]
        ],
    )
    return by_hand_line(case.name, variant, judge_by_hand(variant, result, platform), platform)


def judge_by_hand(variant: Variant, result: ProcessResult, platform: Platform) -> Verdict:
    """The harness's judgement of one process's result, less the culprit: no mismatch guard
    watches a run by hand."""
    unguarded = dataclasses.replace(
        variant,
        expectation=dataclasses.replace(variant.expectation, culprit=""),
        conditions=tuple(
            dataclasses.replace(c, expectation=dataclasses.replace(c.expectation, culprit=""))
            for c in variant.conditions
        ),
    )
    return judge(unguarded, Outcome(returncode=0, results=[result]), platform)


def recorded_result(verdict: Verdict) -> ProcessResult:
    """What the variant's process recorded, read back from its verdict in a report: the run by
    hand's judgement can be made again from any harness run's records."""
    return ProcessResult(
        status="raised" if verdict.error else "clean",
        exception=verdict.error,
        device=None if verdict.device == "-" else verdict.device,
        checks=verdict.checks,
        measurements=verdict.measurements,
        knobs=verdict.knobs,
        warnings=verdict.warnings,
    )


def main() -> None:
    """``python -m shared.harness.by_hand``: read what a run by hand saw (JSON on stdin, written
    by ``shared.record`` at its exit) and print its verdict line."""
    facts = json.load(sys.stdin)
    script, cuda = Path(facts["script"]), tuple(facts["cuda"])
    print(verdict_line(script, facts["record"], facts["raised"], cuda))


if __name__ == "__main__":
    main()
