"""The regression matrix: every case against several library sets, as one table.

`nox -s matrix` runs the gallery once per library set (each in its own environment) with its
JSON reports in `.gallery/matrix/<set>/`, then calls

    python -m shared.harness matrix collect SET REPORT_DIR

which stores that set's observations in `reports/matrix/sets/SET.json` and rewrites the tables
from every stored set: `reports/matrix/matrix.md`, `matrix.json`, and `<case>.json` per case
(the rows the gallery site shows). The table shows what was measured, never a hand-written
expectation: verdict, the exact message seen, and the library versions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from packaging.version import InvalidVersion, Version

from shared.harness.catalog import VERSIONED_PACKAGES
from shared.harness.paths import MATRIX_DIR
from shared.harness.report import ANOMALIES, SKIPPED, CaseReport, Verdict


def observations(library_set: str, report_dir: Path) -> list[dict]:
    """One row per case x variant from a gallery run's JSON reports."""
    rows = []
    for report_path in sorted(report_dir.glob("*.json")):
        report = CaseReport.read(report_path)
        for verdict in report.variants:
            rows.append(
                {
                    "set": library_set,
                    "case": report.case,
                    "variant": verdict.variant,
                    "verdict": verdict.kind,
                    "silent": verdict.silent,
                    "message": _message(verdict),
                    "device": verdict.device,
                    "versions": {k: v for k, v in report.versions.items() if v},
                    "python": report.python,
                    "finished": report.finished,
                }
            )
    return rows


def _message(verdict: Verdict) -> str:
    """The exact error message seen, else what the verdict line said (skip reason, checks)."""
    return verdict.error.first_line if verdict.error else verdict.detail


def flips(rows: list[dict]) -> list[dict]:
    """Where a variant's verdict changes with one library's version, read off the runs.

    For each case/variant and library, the sets that ran it (skips are not measurements) are
    ordered by that library's version and cut where the verdict changes; each cut must fall
    between two different versions, or that library does not explain the change. A boundary is
    the library's alone when the two sets on either side of every cut differ in no other
    library; otherwise the others that changed there too are named.
    """
    found = []
    for key in dict.fromkeys((row["case"], row["variant"]) for row in rows):
        measured = [r for r in rows if (r["case"], r["variant"]) == key and r["verdict"] != SKIPPED]
        if len({r["verdict"] for r in measured}) < 2:
            continue
        splits = [_split_by(measured, package) for package in VERSIONED_PACKAGES]
        splits = [split for split in splits if split]
        isolated = [split for split in splits if not split["also_changed"]]
        for split in isolated or splits[:1]:
            found.append({"case": key[0], "variant": key[1], **split})
    return found


def _split_by(rows: list[dict], package: str) -> dict | None:
    try:
        versioned = sorted(
            ((Version(r["versions"][package]), r) for r in rows if package in r["versions"]),
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
        if segments and row["verdict"] == segments[-1]["verdict"]:
            segments[-1]["last"] = row["versions"][package]
        else:
            if previous is not None:
                if previous[0] == version:
                    return None  # one version, two verdicts: not this library's doing
                # A library installed on one side only is one the case does not use (a case
                # missing a library it needs is SKIPPED, not measured).
                before, after = previous[1]["versions"], row["versions"]
                also_changed |= {
                    other
                    for other in VERSIONED_PACKAGES
                    if other != package
                    and other in before
                    and other in after
                    and before[other] != after[other]
                }
            segments.append({"verdict": row["verdict"], "first": row["versions"][package],
                             "last": row["versions"][package]})  # fmt: skip
        previous = (version, row)
    return {
        "package": package,
        "segments": segments,
        "sets": [r["set"] for _, r in versioned],
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
        parts.append(f"{segment['verdict']} {span}")
    text = f"{flip['variant']}: {', '.join(parts)} (measured on {', '.join(flip['sets'])})"
    if flip["also_changed"]:
        text += f"; {', '.join(flip['also_changed'])} changed at the same step too"
    return text


def write_tables(matrix_dir: Path) -> str:
    """Rebuild matrix.md / matrix.json / <case>.json from every stored set; return the Markdown."""
    rows = []
    # pinned first, latest next, then the others by name
    order = {"pinned": "0", "latest": "1"}
    set_paths = sorted(
        (matrix_dir / "sets").glob("*.json"), key=lambda p: order.get(p.stem, p.stem)
    )
    for set_path in set_paths:
        rows += json.loads(set_path.read_text(encoding="utf-8"))
    (matrix_dir / "matrix.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    for case in sorted({row["case"] for row in rows}):
        case_rows = [row for row in rows if row["case"] == case]
        (matrix_dir / f"{case}.json").write_text(
            json.dumps(case_rows, indent=2) + "\n", encoding="utf-8"
        )
    found = flips(rows)
    markdown = markdown_table(rows, found)
    (matrix_dir / "matrix.md").write_text(markdown, encoding="utf-8")
    (matrix_dir / "flips.json").write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    return markdown


def markdown_table(rows: list[dict], found_flips: list[dict]) -> str:
    lines = [
        "# Regression matrix",
        "",
        "Each cell: the verdict and the exact message seen (generated by `nox -s matrix`; "
        "do not edit by hand).",
    ]
    sets = list(dict.fromkeys(row["set"] for row in rows))
    for case in sorted({row["case"] for row in rows}):
        case_rows = {(row["variant"], row["set"]): row for row in rows if row["case"] == case}
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
            for library_set in case_sets:
                row = case_rows.get((variant, library_set))
                cells.append(_cell(row) if row else "not run")
            lines.append(f"| `{variant}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _set_heading(library_set: str, rows: list[dict]) -> str:
    versions = next(row["versions"] for row in rows if row["set"] == library_set)
    shown = ", ".join(f"{name} {versions[name]}" for name in VERSIONED_PACKAGES if name in versions)
    return f"**{library_set}**<br>{shown}"


def _cell(row: dict) -> str:
    message = row["message"].replace("|", "\\|").replace("\n", " ")
    silent = ", raises nothing" if row.get("silent") else ""
    return f"{row['verdict']} ({row['device']}{silent}): `{message}`"


def add_commands(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="matrix_command", required=True)
    collect = commands.add_parser("collect", help="store a set's reports, rebuild the tables")
    collect.add_argument("library_set")
    collect.add_argument("report_dir", type=Path)
    # GALLERY_MATRIX_DIR: where a test run of the matrix session writes instead.
    default_dir = Path(os.environ.get("GALLERY_MATRIX_DIR", MATRIX_DIR))
    collect.add_argument("--matrix-dir", type=Path, default=default_dir)
    collect.add_argument(
        "--cases", nargs="+", metavar="CASE", help="the cases the set ran: each needs a report"
    )
    collect.set_defaults(handler=collect_command)


def collect_command(args: argparse.Namespace) -> int:
    rows = observations(args.library_set, args.report_dir)
    if not rows:
        print(f"matrix: error: no gallery reports in {args.report_dir}", file=sys.stderr)
        return 2
    missing = sorted(set(args.cases or ()) - {row["case"] for row in rows})
    if missing:
        print(f"matrix: error: {args.library_set} ran, but left no report for {missing} in "
              f"{args.report_dir}: the run did not finish", file=sys.stderr)  # fmt: skip
        return 2
    (args.matrix_dir / "sets").mkdir(parents=True, exist_ok=True)
    set_path = args.matrix_dir / "sets" / f"{args.library_set}.json"
    set_path.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(write_tables(args.matrix_dir))
    changed = [row for row in rows if row["verdict"] in ANOMALIES]
    for row in changed:
        print(f"matrix: CHANGED on {args.library_set}: {row['case']}/{row['variant']} "
              f"{row['verdict']}: {row['message']}", file=sys.stderr)  # fmt: skip
    return 1 if changed else 0
