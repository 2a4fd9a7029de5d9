"""The regression matrix: every case against several library sets; one store, views generated.

The store (committed) holds what was measured, in the one run-report type:
- ``reports/matrix/sets/<set>/<case>.json``: the :class:`CaseReport` a set's run wrote;
- ``reports/matrix/bisections/*.json``: each :class:`Bisection` (``shared.harness.bisect``).

Everything else is a view generated from it, never committed: the rows, the flips (where a
verdict changes with one library's version, with the bisected first release where there is one),
the Markdown table (``python -m shared.harness matrix table``), the timelines and the site.

`nox -s matrix` runs the gallery once per library set (``shared.harness.library_sets``), then

    python -m shared.harness matrix collect SET REPORT_DIR

stores that set's reports (each replacing the same case's earlier report on that set), prints
the table and names every verdict that is not the documented one.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from shared.harness.catalog import VERSIONED_PACKAGES
from shared.harness.library_sets import AS_OF_PREFIX, LibrarySetError, library_set
from shared.harness.paths import MATRIX_DIR
from shared.harness.report import ANOMALIES, SKIPPED, Bisection, CaseReport, Verdict

SETS, BISECTIONS = "sets", "bisections"


@dataclass(frozen=True)
class Row:
    """One case x variant x set: a cell of the table, derived from a stored report."""

    set: str
    case: str
    variant: str
    verdict: str
    silent: bool
    message: str
    device: str
    versions: dict[str, str]
    finished: str

    @property
    def as_of(self) -> datetime.date | None:
        if self.set.startswith(AS_OF_PREFIX):
            return datetime.date.fromisoformat(self.set.removeprefix(AS_OF_PREFIX))
        return None


def set_order(name: str) -> tuple:
    """pinned, latest, the named sets by name, then the dated sweep by date."""
    rank = {"pinned": 0, "latest": 1}.get(name, 3 if name.startswith(AS_OF_PREFIX) else 2)
    return rank, name


def stored_reports(matrix_dir: Path = MATRIX_DIR) -> dict[str, list[CaseReport]]:
    """Every stored set's reports, by set, in set order."""
    folders = [p for p in (matrix_dir / SETS).glob("*") if p.is_dir()]
    return {
        folder.name: [CaseReport.read(path) for path in sorted(folder.glob("*.json"))]
        for folder in sorted(folders, key=lambda p: set_order(p.name))
    }


def rows_of(library_set: str, reports: list[CaseReport]) -> list[Row]:
    return [
        Row(
            set=library_set,
            case=report.case,
            variant=verdict.variant,
            verdict=verdict.kind,
            silent=verdict.silent,
            message=_message(verdict),
            device=verdict.device,
            versions={k: v for k, v in report.versions.items() if v},
            finished=report.finished,
        )
        for report in reports
        for verdict in report.variants
    ]


def all_rows(matrix_dir: Path = MATRIX_DIR) -> list[Row]:
    return [row for name, reports in stored_reports(matrix_dir).items()
            for row in rows_of(name, reports)]  # fmt: skip


def stored_bisections(matrix_dir: Path = MATRIX_DIR) -> list[Bisection]:
    return [Bisection.read(path) for path in sorted((matrix_dir / BISECTIONS).glob("*.json"))]


def _message(verdict: Verdict) -> str:
    """The exact error message seen, else what the verdict line said (skip reason, checks)."""
    return verdict.error.first_line if verdict.error else verdict.detail


def flips(rows: list[Row], bisections: list[Bisection] = ()) -> list[dict]:
    """Where a variant's verdict changes with one library's version, read off the runs.

    For each case/variant and library, the sets that ran it (skips are not measurements) are
    ordered by that library's version and cut where the verdict changes; each cut must fall
    between two different versions, or that library does not explain the change. A boundary is
    the library's alone when the two sets on either side of every cut differ in no other
    library; otherwise the others that changed there too are named, and of such splits the one
    a bisection located (else the one with the fewest cuts) is shown. A cut that a bisection of
    the same case, variant and library located carries its first release.
    """
    found = []
    for key in dict.fromkeys((row.case, row.variant) for row in rows):
        measured = [r for r in rows if (r.case, r.variant) == key and r.verdict != SKIPPED]
        if len({r.verdict for r in measured}) < 2:
            continue
        splits = [_split_by(measured, package) for package in VERSIONED_PACKAGES]
        candidates = [{"case": key[0], "variant": key[1], **split} for split in splits if split]
        for flip in candidates:
            _attach_bisections(flip, bisections)
        isolated = [flip for flip in candidates if not flip["also_changed"]]
        if isolated:
            found += isolated
        elif candidates:  # every library changed at some cut: the likeliest explanation
            found.append(min(candidates, key=_explains_less))
    return found


def _explains_less(flip: dict) -> tuple[int, int]:
    """Rank of a non-isolated split: one whose cuts a bisection located first, then the one
    that needs the fewest cuts (the library order breaks ties)."""
    cuts = flip["segments"][1:]
    return (-sum("bisected" in cut for cut in cuts), len(cuts))


def _attach_bisections(flip: dict, bisections: list[Bisection]) -> None:
    """Give each cut of ``flip`` the bisection that located it (same verdicts either side)."""
    for before, after in zip(flip["segments"], flip["segments"][1:], strict=False):
        for bisection in bisections:
            if (
                (bisection.case, bisection.variant, bisection.package)
                == (flip["case"], flip["variant"], flip["package"])
                and not bisection.flaky
                and (bisection.verdict_before, bisection.verdict_after)
                == (before["verdict"], after["verdict"])
                and Version(before["last"]) <= Version(bisection.last_before)
                and Version(bisection.first_changed) <= Version(after["first"])
            ):
                after["bisected"] = bisection.first_changed
                after["bisected_after"] = bisection.last_before
                after["bisected_over"] = bisection.base


def _split_by(rows: list[Row], package: str) -> dict | None:
    try:
        versioned = sorted(
            ((Version(r.versions[package]), r) for r in rows if package in r.versions),
            key=lambda pair: pair[0],
        )
    except InvalidVersion:
        return None
    if len(versioned) != len(rows):
        return None  # a set without the package cannot be placed on its axis
    segments: list[dict] = []  # runs of one verdict: {"verdict", "first", "last"}
    also_changed: set[str] = set()
    previous = None
    for version, row in versioned:
        if segments and row.verdict == segments[-1]["verdict"]:
            segments[-1]["last"] = row.versions[package]
        else:
            if previous is not None:
                if previous[0] == version:
                    return None  # one version, two verdicts: not this library's doing
                # A library installed on one side only is one the case does not use (a case
                # missing a library it needs is SKIPPED, not measured).
                before, after = previous[1].versions, row.versions
                also_changed |= {
                    other
                    for other in VERSIONED_PACKAGES
                    if other != package
                    and other in before
                    and other in after
                    and before[other] != after[other]
                }
            segments.append({"verdict": row.verdict, "first": row.versions[package],
                             "last": row.versions[package]})  # fmt: skip
        previous = (version, row)
    return {
        "package": package,
        "segments": segments,
        "sets": [r.set for _, r in versioned],
        "also_changed": sorted(also_changed, key=VERSIONED_PACKAGES.index),
    }


def flip_text(flip: dict) -> str:
    package, segments = flip["package"], flip["segments"]
    parts = []
    for index, segment in enumerate(segments):
        if index == 0:
            span = f"on {package} <= {segment['last']}"
        elif index == len(segments) - 1:
            span = f"from {package} {segment['first']}"
        elif segment["first"] == segment["last"]:
            span = f"on {package} {segment['first']}"
        else:
            span = f"on {package} {segment['first']} to {segment['last']}"
        if index and "bisected" in segment:
            span += (f" [first release: {segment['bisected']}, after {segment['bisected_after']}; "
                     f"bisected over {segment['bisected_over']}]")  # fmt: skip
        elif index:
            span += " [not bisected]"
        parts.append(f"{segment['verdict']} {span}")
    sets = ", ".join(dict.fromkeys(flip["sets"]))
    text = f"{flip['variant']}: {', '.join(parts)} (measured on {sets})"
    if flip["also_changed"]:
        text += f"; {', '.join(flip['also_changed'])} changed at the same step too"
    return text


def markdown_table(rows: list[Row], found_flips: list[dict]) -> str:
    lines = [
        "# Regression matrix",
        "",
        "Each cell: the verdict and the exact message seen. Generated from the reports stored "
        "in `reports/matrix/sets/` (`python -m shared.harness matrix table`).",
    ]
    sets = list(dict.fromkeys(row.set for row in rows))
    for case in sorted({row.case for row in rows}):
        case_rows = {(row.variant, row.set): row for row in rows if row.case == case}
        case_sets = [s for s in sets if any(key[1] == s for key in case_rows)]
        lines += ["", f"## {case}", ""]
        case_flips = [flip for flip in found_flips if flip["case"] == case]
        if case_flips:
            lines += ["Where the outcome changes (measured):", ""]
            lines += [f"- {flip_text(flip)}" for flip in case_flips]
            lines.append("")
        lines.append("| variant | " + " | ".join(_set_heading(s, rows) for s in case_sets) + " |")
        lines.append("|---" * (len(case_sets) + 1) + "|")
        for variant in dict.fromkeys(key[0] for key in case_rows):
            cells = []
            for name in case_sets:
                row = case_rows.get((variant, name))
                cells.append(_cell(row) if row else "not run")
            lines.append(f"| `{variant}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _set_heading(library_set: str, rows: list[Row]) -> str:
    versions = next(row.versions for row in rows if row.set == library_set)
    shown = ", ".join(f"{name} {versions[name]}" for name in VERSIONED_PACKAGES if name in versions)
    return f"**{library_set}**<br>{shown}"


def _cell(row: Row) -> str:
    message = row.message.replace("|", "\\|").replace("\n", " ")
    silent = ", raises nothing" if row.silent else ""
    return f"{row.verdict} ({row.device}{silent}): `{message}`"


def add_commands(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="matrix_command", required=True)
    # GALLERY_MATRIX_DIR: where a test run of the matrix session writes instead.
    default_dir = Path(os.environ.get("GALLERY_MATRIX_DIR", MATRIX_DIR))
    collect = commands.add_parser("collect", help="store a set's reports, print the table")
    collect.add_argument("library_set")
    collect.add_argument("report_dir", type=Path)
    collect.add_argument("--matrix-dir", type=Path, default=default_dir)
    collect.add_argument(
        "--cases", nargs="+", metavar="CASE", help="the cases the set ran: each needs a report"
    )
    collect.set_defaults(handler=collect_command)
    table = commands.add_parser("table", help="print the table and flips of the stored sets")
    table.add_argument("--matrix-dir", type=Path, default=default_dir)
    table.set_defaults(handler=table_command)
    cases = commands.add_parser("cases", help="the cases a library set runs, one per line")
    cases.add_argument("library_set")
    cases.set_defaults(handler=cases_command)


def table_text(matrix_dir: Path) -> str:
    rows = all_rows(matrix_dir)
    return markdown_table(rows, flips(rows, stored_bisections(matrix_dir)))


def collect_command(args: argparse.Namespace) -> int:
    reports = [CaseReport.read(path) for path in sorted(args.report_dir.glob("*.json"))]
    if not reports:
        print(f"matrix: error: no gallery reports in {args.report_dir}", file=sys.stderr)
        return 2
    missing = sorted(set(args.cases or ()) - {report.case for report in reports})
    if missing:
        print(f"matrix: error: {args.library_set} ran, but left no report for {missing} in "
              f"{args.report_dir}: the run did not finish", file=sys.stderr)  # fmt: skip
        return 2
    folder = args.matrix_dir / SETS / args.library_set
    for report in reports:  # a set holds each case's latest run on it
        report.write(folder)
    print(table_text(args.matrix_dir))
    changed = [row for row in rows_of(args.library_set, reports) if row.verdict in ANOMALIES]
    for row in changed:
        print(f"matrix: CHANGED on {args.library_set}: {row.case}/{row.variant} "
              f"{row.verdict}: {row.message}", file=sys.stderr)  # fmt: skip
    return 1 if changed else 0


def table_command(args: argparse.Namespace) -> int:
    print(table_text(args.matrix_dir), end="")
    return 0


def cases_command(args: argparse.Namespace) -> int:
    try:
        print("\n".join(library_set(args.library_set).cases))
    except LibrarySetError as exc:
        print(f"matrix: error: {exc}", file=sys.stderr)
        return 2
    return 0
