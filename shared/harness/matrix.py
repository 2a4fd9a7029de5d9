"""The regression matrix: every case against several library sets; one store, views generated.

The store (committed, ``reports/matrix/``; format in ``shared.harness.store`` and
``reports/README.md``) holds what was measured: per set a header of the environments it ran in
(what was asked, every installed package, Python, machine) and a record per case (a row per
variant), and the bisections. Everything else is a view generated from it, never committed: the
rows, the flips (where a verdict changes with one library's version, with the bisected first
release where there is one), the Markdown table, the timelines and the site.

`nox -s matrix` installs one library set (``shared.harness.library_sets``) into an environment
holding exactly it (``shared.harness.environment``), then runs, in that environment:

    python -m shared.harness matrix environment REPORT_DIR --set SET --asked JSON
        records the environment; exit 2 if a library cannot be imported (no case runs)
    python -m shared.harness run CASES --report-dir REPORT_DIR
    python -m shared.harness matrix collect SET REPORT_DIR --cases CASES
        stores the set's records, writes the table of every set to a file, and ends with the
        set's verdicts and every verdict that is not the documented one

and ``matrix table`` prints the table, ``matrix check`` fails on a declared (set, case) cell the
store lacks, ``matrix convert`` turns run reports and older bisections into the store's format.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from shared.harness import ExitCode, store
from shared.harness.environment import import_failures, installed_packages, platform_description
from shared.harness.kinds import ANOMALIES, EXPECTED_KINDS, SKIPPED
from shared.harness.libraries import VERSIONED_PACKAGES
from shared.harness.library_sets import LibrarySetError, library_set, named_sets, set_date
from shared.harness.paths import MATRIX_DIR, MATRIX_REPORTS_DIR, relative
from shared.harness.report import Bisection, CaseReport
from shared.harness.store import BISECTIONS, SETS

ENVIRONMENT_FILE = "environment.json"  # in a set's report folder: what `matrix environment` saw
TABLE_FILE = MATRIX_REPORTS_DIR / "table.md"  # where `collect` writes the table of every set


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
        return set_date(self.set)


def set_order(name: str) -> tuple:
    """pinned, latest, the named sets by name, then the dated sweep by date."""
    rank = {"pinned": 0, "latest": 1}.get(name, 3 if set_date(name) else 2)
    return rank, name


def stored_sets(matrix_dir: Path = MATRIX_DIR) -> dict[str, list[tuple[dict, dict]]]:
    """Every stored set's (case record, environment) pairs, by set, in set order."""
    folders = [p for p in (matrix_dir / SETS).glob("*") if p.is_dir()]
    return {folder.name: store.read_set(folder)
            for folder in sorted(folders, key=lambda p: set_order(p.name))}  # fmt: skip


def rows_of(library_set: str, record: dict, environment: dict) -> list[Row]:
    """The rows of one stored case record."""
    versions = store.versions_of(environment)
    return [
        Row(
            set=library_set,
            case=record["case"],
            variant=row["variant"],
            verdict=row["kind"],
            silent=row["silent"],
            message=_message(row),
            device=row["device"],
            versions=versions,
            finished=record["finished"],
        )
        for row in record["variants"]
    ]


def all_rows(matrix_dir: Path = MATRIX_DIR) -> list[Row]:
    return [row for name, cases in stored_sets(matrix_dir).items()
            for record, environment in cases
            for row in rows_of(name, record, environment)]  # fmt: skip


def stored_bisections(matrix_dir: Path = MATRIX_DIR) -> list[Bisection]:
    paths = sorted((matrix_dir / BISECTIONS).glob("*.json"))
    return [store.read_bisection(path) for path in paths]


def _message(row: dict) -> str:
    """The exact error line seen, else what the verdict line said (skip reason, checks)."""
    error = row["error"]
    return f"{error['type']}: {error['message']}" if error else row["detail"]


def flips(rows: list[Row], bisections: list[Bisection] = ()) -> list[dict]:
    """Where a variant's verdict changes with one library's version, read off the runs.

    For each case/variant and library, the sets that ran it (skips are not measurements) are
    ordered by that library's version and cut where the verdict changes; each cut must fall
    between two different versions, or that library does not explain the change. A boundary is
    the library's alone when at every cut some set of the version before it and some set of the
    version after it differ in no other library (however many other sets ran those versions);
    otherwise the others that changed between the closest such pair are named, and of such
    splits the one a bisection located (else the one with the fewest cuts) is shown. A cut that
    a bisection of the same case, variant and library located carries its first release.
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
    groups: list[list[Row]] = []  # the sets of one version of the library, in version order
    for index, (version, row) in enumerate(versioned):
        if index and version == versioned[index - 1][0]:
            groups[-1].append(row)
        else:
            groups.append([row])
    if any(len({row.verdict for row in group}) > 1 for group in groups):
        return None  # one version, two verdicts: not this library's doing
    segments: list[dict] = []  # runs of one verdict: {"verdict", "first", "last"}
    also_changed: set[str] = set()
    for index, group in enumerate(groups):
        version = group[0].versions[package]
        if segments and group[0].verdict == segments[-1]["verdict"]:
            segments[-1]["last"] = version
            continue
        if segments:  # a cut: the pair of sets across it that differs least in the others
            also_changed |= min(
                (_others_changed(before, after, package)
                 for before in groups[index - 1] for after in group),
                key=len,
            )  # fmt: skip
        segments.append({"verdict": group[0].verdict, "first": version, "last": version})
    return {
        "package": package,
        "segments": segments,
        "sets": [r.set for _, r in versioned],
        "also_changed": sorted(also_changed, key=VERSIONED_PACKAGES.index),
    }


def _others_changed(before: Row, after: Row, package: str) -> set[str]:
    """The libraries besides ``package`` whose versions differ between two sets. A library
    installed on one side only is one the case does not use (a case missing a library it needs
    is SKIPPED, not measured)."""
    return {
        other
        for other in VERSIONED_PACKAGES
        if other != package
        and other in before.versions
        and other in after.versions
        and before.versions[other] != after.versions[other]
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
    environment = commands.add_parser(
        "environment", help="record this environment for a set; exit 2 if a library won't import"
    )
    environment.add_argument("report_dir", type=Path)
    environment.add_argument("--set", required=True, dest="library_set")
    environment.add_argument("--asked", required=True, help="what was asked, as JSON")
    environment.set_defaults(handler=environment_command)
    collect = commands.add_parser("collect", help="store a set's records, write the table")
    collect.add_argument("library_set")
    collect.add_argument("report_dir", type=Path)
    collect.add_argument("--matrix-dir", type=Path, default=default_dir)
    collect.add_argument(
        "--cases", nargs="+", metavar="CASE", help="the cases the set ran: each needs a report"
    )
    collect.add_argument("--table", type=Path, default=TABLE_FILE, help="where the table goes")
    collect.set_defaults(handler=collect_command)
    table = commands.add_parser("table", help="print the table and flips of the stored sets")
    table.add_argument("--matrix-dir", type=Path, default=default_dir)
    table.add_argument("--case", help="only this case's rows, on every set that ran it")
    table.set_defaults(handler=table_command)
    cases = commands.add_parser("cases", help="the cases a library set runs, one per line")
    cases.add_argument("library_set")
    cases.set_defaults(handler=cases_command)
    check = commands.add_parser(
        "check", help="fail on a declared (set, case) cell the store lacks, or an unconverted file"
    )
    check.add_argument("--matrix-dir", type=Path, default=default_dir)
    check.set_defaults(handler=check_command)
    convert = commands.add_parser(
        "convert", help="rewrite run reports and old bisections in the store's format (idempotent)"
    )
    convert.add_argument("--matrix-dir", type=Path, default=default_dir)
    convert.set_defaults(handler=convert_command)


def table_text(matrix_dir: Path, rows: list[Row] | None = None) -> str:
    """The table of ``rows`` (default: every stored set's) with the flips read off them."""
    rows = all_rows(matrix_dir) if rows is None else rows
    return markdown_table(rows, flips(rows, stored_bisections(matrix_dir)))


def environment_command(args: argparse.Namespace) -> int:
    """Run by this environment's interpreter: what it holds, and whether its libraries import."""
    args.report_dir.mkdir(parents=True, exist_ok=True)
    recorded = {
        "set": args.library_set,
        "asked": json.loads(args.asked),
        "installed": installed_packages(),
        **platform_description(),
    }
    path = args.report_dir / ENVIRONMENT_FILE
    path.write_text(json.dumps(recorded, indent=2) + "\n", encoding="utf-8")
    failures = import_failures()
    for failure in failures:
        remedy = (f"add the package that provides {failure.missing_module!r} to the set: after "
                  f"`--` beside the set's own (`nox -s \"matrix(custom)\" -- --as-of DATE NAME`), "
                  "or a line of your -r file")  # fmt: skip
        print(f"matrix: error: {failure.describe(args.library_set, remedy)}", file=sys.stderr)
    return ExitCode.USAGE_ERROR if failures else ExitCode.OK


def collect_command(args: argparse.Namespace) -> int:
    reports = [CaseReport.read(path) for path in sorted(args.report_dir.glob("*.json"))
               if path.name != ENVIRONMENT_FILE]  # fmt: skip
    if not reports:
        print(f"matrix: error: no gallery reports in {args.report_dir}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    missing = sorted(set(args.cases or ()) - {report.case for report in reports})
    if missing:
        print(f"matrix: error: {args.library_set} ran, but left no report for {missing} in "
              f"{args.report_dir}: the run did not finish", file=sys.stderr)  # fmt: skip
        return ExitCode.USAGE_ERROR
    seen = args.report_dir / ENVIRONMENT_FILE
    if not seen.exists():
        print(f"matrix: error: {seen} is missing: the set's environment was not recorded "
              "(python -m shared.harness matrix environment, as nox's matrix session does)",
              file=sys.stderr)  # fmt: skip
        return ExitCode.USAGE_ERROR
    recorded = json.loads(seen.read_text(encoding="utf-8"))
    environment = store.new_environment(
        asked=recorded["asked"],
        installed=recorded["installed"],
        python=recorded["python"],
        machine=recorded["machine"],
        cuda_devices=sorted({name for report in reports for name in report.cuda_devices}),
        recorded=min(report.finished for report in reports),
    )
    folder = args.matrix_dir / SETS / args.library_set
    rows = []
    for report in reports:  # a set holds each case's latest run on it
        record = store.case_record(report, environment)
        store.store_case(folder, record, environment)
        rows += rows_of(args.library_set, record, environment)
    args.table.parent.mkdir(parents=True, exist_ok=True)
    args.table.write_text(table_text(args.matrix_dir), encoding="utf-8")
    print(f"matrix: the table of every stored set: {relative(args.table)}")
    print(f"matrix: {args.library_set}, stored in {relative(folder)}:")
    for row in rows:
        print(f"  {row.case}/{row.variant}: {row.verdict} ({row.device}): {row.message}")
    documented = sum(row.verdict in EXPECTED_KINDS for row in rows)
    skipped = sum(row.verdict == SKIPPED for row in rows)
    changed = [row for row in rows if row.verdict in ANOMALIES]
    print(f"matrix: {args.library_set}: {documented} as documented, {skipped} skipped, "
          f"{len(changed)} changed", flush=True)  # fmt: skip
    for row in changed:  # last: what a user must read
        print(f"matrix: CHANGED on {args.library_set}: {row.case}/{row.variant} "
              f"{row.verdict}: {row.message}", file=sys.stderr)  # fmt: skip
    return ExitCode.ANOMALIES if changed else ExitCode.OK


def table_command(args: argparse.Namespace) -> int:
    rows = [row for row in all_rows(args.matrix_dir) if args.case in (None, row.case)]
    if args.case and not rows:
        print(f"matrix: error: no stored run of {args.case!r} in {relative(args.matrix_dir)}",
              file=sys.stderr)  # fmt: skip
        return ExitCode.USAGE_ERROR
    print(table_text(args.matrix_dir, rows), end="")
    return ExitCode.OK


def cases_command(args: argparse.Namespace) -> int:
    try:
        print("\n".join(library_set(args.library_set).cases))
    except LibrarySetError as exc:
        print(f"matrix: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    return ExitCode.OK


def declared_cells() -> dict[str, tuple[str, ...]]:
    """Every (set, cases) pyproject.toml declares: pinned, [tool.gallery.matrix], the sweep."""
    return {name: library_set(name).cases for name in named_sets()}


def check_command(args: argparse.Namespace) -> int:
    found = store.problems(args.matrix_dir, declared_cells())
    for problem in found:
        print(f"matrix: {problem}", file=sys.stderr)
    print(f"matrix check: {len(found)} problem(s) in {relative(args.matrix_dir)}")
    return ExitCode.ANOMALIES if found else ExitCode.OK


def convert_command(args: argparse.Namespace) -> int:
    changed = store.convert(args.matrix_dir)
    print(f"matrix convert: {len(changed)} file(s) rewritten in {relative(args.matrix_dir)}")
    return ExitCode.OK
