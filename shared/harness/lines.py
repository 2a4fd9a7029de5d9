"""Every line a verdict is shown in, made here once: the harness's row and case summary
(``python -m shared.harness run``), the cells of the site's verdict table, and the one sentence
a run by hand ends with."""

from __future__ import annotations

import datetime
import functools
import textwrap
from dataclasses import dataclass

from shared.harness.case import FAILURES, Case, Variant
from shared.harness.kinds import ANOMALIES, REPRODUCED, SKIPPED, UNAFFECTED, kind_of
from shared.harness.library_sets import PINNED, named_sets, set_date
from shared.harness.matrix import Row, all_rows, flip_text, flips, stored_bisections
from shared.harness.report import Verdict
from shared.harness.verdicts import Platform

KIND_WIDTH, NAME_WIDTH = 14, 26
PREFIX = "gallery verdict:"  # a run by hand's last line


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


def by_hand_line(case: str, variant: Variant, verdict: Verdict, platform: Platform) -> str:
    """The one sentence a learner reads for ``verdict`` (a run by hand's last line)."""
    versions = ", ".join(f"{k} {v}" for k, v in platform.versions.items() if v)
    where = _where_it_exists(variant, case) if verdict.kind == UNAFFECTED else ""
    sentence = kind_of(verdict.kind).by_hand.format(detail=verdict.detail, versions=versions,
                                                    where=where)  # fmt: skip
    return f"{PREFIX} {verdict.kind}: {sentence}"


def _where_it_exists(variant: Variant, case: str, measured: bool = True) -> str:
    """The matrix's measured flip of the variant, else what its ``when`` entries declare."""
    rows = [row for row in _stored_rows() if (row.case, row.variant) == (case, variant.name)]
    found = flips(rows, stored_bisections()) if measured else []
    if found:
        return f"measured: {flip_text(found[0])}"

    def spec(condition) -> str:
        return ", ".join(f"{name} {s}" for name, s in condition.packages.items())

    if variant.expectation.expect == "absent":
        where = [spec(c) for c in variant.conditions if c.expectation.expect != "absent"]
        return f"case.toml documents it on {'; '.join(where)}" if where else ""
    where = [spec(c) for c in variant.conditions if c.expectation.expect == "absent"]
    return f"case.toml documents it on the versions outside {'; '.join(where)}" if where else ""


@functools.cache
def _stored_rows() -> tuple[Row, ...]:
    return tuple(all_rows())


def failure_command(case: Case, variant: Variant, rows: tuple[Row, ...] | None = None) -> str:
    """For a failing variant that ran clean here (UNAFFECTED) or could not run (SKIPPED): the one
    command that shows its failure, on a stored library set where it REPRODUCED on the CPU and
    that its case.toml documents it failing on (a `when` entry holds for the set's versions).
    Of those: a set ``[tool.gallery.matrix]`` declares, else the newest dated one. Where no
    stored run shows it: the versions case.toml documents it on. "" for a fixed variant."""
    expectations = (variant.expectation, *(c.expectation for c in variant.conditions))
    if not any(expectation.expect in FAILURES for expectation in expectations):
        return ""
    rows = _stored_rows() if rows is None else rows
    declared = set(named_sets()) - {PINNED, "latest"}  # the stacks that stay as stored
    shown = [
        row for row in rows
        if (row.case, row.variant) == (case.name, variant.name) and row.verdict == REPRODUCED
        and row.device == "cpu" and row.set in declared
        and variant.expectation_for(row.versions, "cpu").expect in FAILURES
    ]  # fmt: skip
    if not shown:
        documented = _where_it_exists(variant, case.name, measured=False)
        return f"no stored run shows it fail on the CPU; {documented}" if documented else ""
    best = min(
        shown,
        key=lambda row: (
            set_date(row.set) is not None,
            -(set_date(row.set) or datetime.date.min).toordinal(),
        ),
    )
    named = dict.fromkeys(["torch", *sorted({n for c in variant.conditions for n in c.packages})])
    versions = ", ".join(f"{name} {best.versions[name]}" for name in named
                         if best.versions.get(name))  # fmt: skip
    return (f'to see it fail: nox -s "matrix({best.set})" -- {case.name}   '
            f"(stored: {REPRODUCED} there, on {versions})")  # fmt: skip


def failure_line(case: Case, variant: Variant, verdict: Verdict) -> str:
    """The line under a failing variant's verdict that shows no failure here (UNAFFECTED, or
    SKIPPED where a stored set shows it): where and how a learner sees it fail."""
    if verdict.kind not in (UNAFFECTED, SKIPPED):
        return ""
    command = failure_command(case, variant)
    if verdict.kind == SKIPPED and not command.startswith("to see it fail"):
        return ""  # the skip's reason says what it needs
    return f"  {'':<{KIND_WIDTH}} {command}" if command else ""
