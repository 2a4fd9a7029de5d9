"""Every line a verdict is shown in, made here once: the harness's row and case summary
(``python -m shared.harness run``) and the one sentence a run by hand ends with."""

from __future__ import annotations

import textwrap

from shared.harness.catalog import Variant
from shared.harness.matrix import all_rows, flip_text, flips, stored_bisections
from shared.harness.report import PASSED, REPRODUCED, SKIPPED, UNAFFECTED, Verdict
from shared.harness.verdicts import Platform

KIND_WIDTH, NAME_WIDTH = 14, 26
PREFIX = "gallery verdict:"  # a run by hand's last line


def verdict_row(verdict: Verdict) -> str:
    """The harness's line for a verdict (and, under it, its culprit, first inf/NaN, note, and an
    anomaly's output tail)."""
    seconds = f"{verdict.seconds:5.1f}s" if verdict.kind != SKIPPED else "     -"
    lines = [f"  {verdict.kind:<{KIND_WIDTH}} {verdict.variant:<{NAME_WIDTH}} {verdict.device:<5} "
             f"{seconds}  {verdict.detail}"]  # fmt: skip
    if verdict.culprit:
        lines.append(f"  {'':<{KIND_WIDTH}} culprit: {verdict.culprit['description']}")
    if verdict.producer:
        lines.append(f"  {'':<{KIND_WIDTH}} first inf/NaN: {verdict.producer['description']}")
    if verdict.note:
        lines.append(f"  {'':<{KIND_WIDTH}} note: {verdict.note}")
    if verdict.is_anomaly and verdict.output_tail:
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
    anomalies = [f"{v.variant} {v.kind}" for v in case_verdicts if v.is_anomaly]
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
    if verdict.kind == SKIPPED:
        return f"{PREFIX} {SKIPPED}: the harness would not run this here: {verdict.detail}"
    if verdict.kind == REPRODUCED:
        return f"{PREFIX} {REPRODUCED}: this run shows the documented failure ({verdict.detail})"
    if verdict.kind == UNAFFECTED:
        return (f"{PREFIX} {UNAFFECTED}: the failure is absent on these versions ({versions}), "
                f"as documented; {_where_it_exists(variant, case)}")  # fmt: skip
    if verdict.kind == PASSED:
        return f"{PREFIX} {PASSED}: fixed: matches float32 ({verdict.detail})"
    return f"{PREFIX} {verdict.kind}: NOT as documented: {verdict.detail}"


def _where_it_exists(variant: Variant, case: str) -> str:
    """The matrix's measured flip of the variant, else what its ``when`` entries declare."""
    rows = [row for row in all_rows() if (row.case, row.variant) == (case, variant.name)]
    found = flips(rows, stored_bisections())
    if found:
        return f"measured: {flip_text(found[0])}"

    def spec(condition) -> str:
        return ", ".join(f"{name} {s}" for name, s in condition.packages.items())

    if variant.expectation.expect == "absent":
        where = [spec(c) for c in variant.conditions if c.expectation.expect != "absent"]
        return f"case.toml documents it on {'; '.join(where)}" if where else ""
    where = [spec(c) for c in variant.conditions if c.expectation.expect == "absent"]
    return f"case.toml documents it on the versions outside {'; '.join(where)}"
