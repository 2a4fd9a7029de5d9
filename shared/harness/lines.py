"""Every line a verdict is shown in, made here once: the harness's row and case summary
(``python -m shared.harness run``), the cells of the site's verdict table, and the one sentence
a run by hand ends with. It only formats: a fact beyond the verdict (the stored runs of the
regression matrix) is looked up by the step that shows it (``steps.stored_runs``) and handed
here as data."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from shared.harness.case import FAILURES, Case, Variant
from shared.harness.kinds import ANOMALIES, EXPECTED_KINDS, REPRODUCED, SKIPPED, UNAFFECTED, kind_of
from shared.harness.report import Verdict
from shared.harness.verdicts import Platform

KIND_WIDTH, NAME_WIDTH = 14, 26
PREFIX = "gallery verdict:"  # a run by hand's last line


@dataclass(frozen=True)
class StoredRuns:
    """What the regression matrix's stored runs say of one variant (``steps.stored_runs``)."""

    flip: str = ""  # its measured flip ("on transformers <= 4.37.2: ..."), "" when none is
    reproduced_on: str = ""  # a stored set where its failure REPRODUCED on the CPU, as documented
    versions: str = ""  # that set's torch and the libraries its `when` entries name


@dataclass(frozen=True)
class VerdictCells:
    """A verdict's parts as every view shows them: the harness's row, the site's table."""

    kind: str
    variant: str
    device: str
    seconds: str  # "-" for a variant that never ran
    detail: str
    notes: tuple[str, ...]  # its culprit, first inf/NaN and note, each "what: text"


def verdict_cells(verdict: Verdict) -> VerdictCells:
    notes = (
        ("culprit", (verdict.culprit or {}).get("description")),
        ("first inf/NaN", (verdict.producer or {}).get("description")),
        ("note", verdict.note),
    )
    return VerdictCells(
        kind=verdict.kind,
        variant=verdict.variant,
        device=verdict.device,
        seconds="-" if verdict.kind == SKIPPED else f"{verdict.seconds:.1f}s",
        detail=verdict.detail,
        notes=tuple(f"{what}: {text}" for what, text in notes if text),
    )


def verdict_row(verdict: Verdict) -> str:
    """The harness's line for a verdict (and, under it, its culprit, first inf/NaN, note, and an
    anomaly's output tail)."""
    cells = verdict_cells(verdict)
    lines = [f"  {cells.kind:<{KIND_WIDTH}} {cells.variant:<{NAME_WIDTH}} {cells.device:<5} "
             f"{cells.seconds:>6}  {cells.detail}"]  # fmt: skip
    lines += [f"  {'':<{KIND_WIDTH}} {note}" for note in cells.notes]
    if verdict.kind in ANOMALIES and verdict.output_tail:
        lines.append(textwrap.indent(verdict.output_tail, "  | "))
    return "\n".join(lines)


def case_summary(case_name: str, case_verdicts: list[Verdict]) -> str:
    """The line that ends a case: its counts, and whether it ran as documented."""
    kinds = [verdict.kind for verdict in case_verdicts]
    silent = sum(verdict.silent for verdict in case_verdicts)
    counts = ", ".join(
        f"{kinds.count(k)} {k.lower()}"
        + (f" ({silent} raising nothing)" if silent and k == REPRODUCED else "")
        for k in dict.fromkeys(kinds)
    )
    anomalies = [f"{v.variant} {v.kind}" for v in case_verdicts if v.kind in ANOMALIES]
    if anomalies:
        status = "NOT AS DOCUMENTED: " + ", ".join(anomalies)
    elif all(kind == SKIPPED for kind in kinds):
        status = "NOT VERIFIED here (every variant skipped)"
    else:
        status = "as documented"
    return f"  => {case_name}: {counts} -- {status}"


def by_hand_line(
    case: str, variant: Variant, verdict: Verdict, platform: Platform, stored: StoredRuns
) -> str:
    """The one sentence a learner reads for ``verdict`` (a run by hand's last line)."""
    versions = ", ".join(f"{k} {v}" for k, v in platform.versions.items() if v)
    where = ""
    if verdict.kind == UNAFFECTED:
        where = f"measured: {stored.flip}" if stored.flip else _documented_where(variant)
    sentence = kind_of(verdict.kind).by_hand.format(detail=verdict.detail, versions=versions,
                                                    where=where)  # fmt: skip
    return f"{PREFIX} {verdict.kind}: {sentence}"


def _documented_where(variant: Variant) -> str:
    """Where the variant's ``when`` entries declare its failure."""

    def spec(condition) -> str:
        return ", ".join(f"{name} {s}" for name, s in condition.packages.items())

    if variant.expectation.expect == "absent":
        where = [spec(c) for c in variant.conditions if c.expectation.expect != "absent"]
        return f"case.toml documents it on {'; '.join(where)}" if where else ""
    where = [spec(c) for c in variant.conditions if c.expectation.expect == "absent"]
    return f"case.toml documents it on the versions outside {'; '.join(where)}" if where else ""


def failure_command(case: Case, variant: Variant, stored: StoredRuns) -> str:
    """For a failing variant that ran clean here (UNAFFECTED) or could not run (SKIPPED): the one
    command that shows its failure, on the stored set ``stored`` names; where no stored run shows
    it, the versions case.toml documents it on. "" for a fixed variant."""
    expectations = (variant.expectation, *(c.expectation for c in variant.conditions))
    if not any(expectation.expect in FAILURES for expectation in expectations):
        return ""
    if not stored.reproduced_on:
        documented = _documented_where(variant)
        return f"no stored run shows it fail on the CPU; {documented}" if documented else ""
    return (f'to see it fail: nox -s "matrix({stored.reproduced_on})" -- {case.name}   '
            f"(stored: {REPRODUCED} there, on {stored.versions})")  # fmt: skip


def failure_line(case: Case, variant: Variant, verdict: Verdict, stored: StoredRuns) -> str:
    """The line under a failing variant's verdict that shows no failure here (UNAFFECTED, or
    SKIPPED where a stored set shows it): where and how a learner sees it fail."""
    if verdict.kind not in (UNAFFECTED, SKIPPED):
        return ""
    command = failure_command(case, variant, stored)
    if verdict.kind == SKIPPED and not stored.reproduced_on:
        return ""  # the skip's reason says what it needs
    return f"  {'':<{KIND_WIDTH}} {command}" if command else ""


def run_summary(verdicts: list[Verdict], seconds: float) -> str:
    """The line that ends a run: its counts, OK or FAILED (any anomaly)."""
    anomalies = sum(v.kind in ANOMALIES for v in verdicts)
    expected = sum(v.kind in EXPECTED_KINDS for v in verdicts)
    skipped = sum(v.kind == SKIPPED for v in verdicts)
    summary = f"{expected} as documented, {anomalies} anomalies, {skipped} skipped"
    return f"\ngallery: {'FAILED' if anomalies else 'OK'} ({summary}) in {seconds:.1f} s"
