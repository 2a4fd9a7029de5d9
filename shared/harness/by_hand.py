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

from shared.harness import steps
from shared.harness.case import Case, CaseError, Variant
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
from shared.harness.verdicts import Platform


def verdict_line(
    script: Path, record: dict, raised: dict | None, cuda_device_names: tuple[str, ...] = ()
) -> str:
    """The line a run by hand ends with: ``record`` is what it recorded, ``raised`` its
    exception (``shared.record.raised``), on a machine with these CUDA devices. The harness's
    own plan and judge steps (``steps``); the run step is the script's own process."""
    script = script.resolve()
    try:
        case = load_case(script.parent.name, script.parent.parent)
    except CaseError as exc:
        return f"{PREFIX} none: {exc}"
    variant = next((v for v in case.variants if v.script.resolve() == script), None)
    if variant is None:
        return f"{PREFIX} none: {script.name} is no variant of {case.name}'s case.toml"
    platform = Platform.installed(cuda_device_names)
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
    verdict = judge_by_hand(variant, result, platform, case)
    return by_hand_line(case.name, variant, verdict, platform, steps.stored_runs(case, variant))


def judge_by_hand(
    variant: Variant, result: ProcessResult, platform: Platform, case: Case | None = None
) -> Verdict:
    """The harness's plan and judgement of one process's result, less the culprit: no mismatch
    guard watches a run by hand. A variant the plan skips here is SKIPPED, as in the harness."""
    unguarded = dataclasses.replace(
        variant,
        expectation=dataclasses.replace(variant.expectation, culprit=""),
        conditions=tuple(
            dataclasses.replace(c, expectation=dataclasses.replace(c.expectation, culprit=""))
            for c in variant.conditions
        ),
    )
    alone = dataclasses.replace(case or _case_of(variant), variants=(unguarded,))
    (planned,) = steps.plan([alone], platform)
    outcome = (Outcome(not_run=planned.not_run) if planned.not_run
               else Outcome(returncode=0, results=[result]))  # fmt: skip
    return next(steps.judge_each([planned], iter([outcome]), platform))


def _case_of(variant: Variant) -> Case:
    folder = variant.script.resolve().parent
    return load_case(folder.name, folder.parent)


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
