"""Build the static site: an index with one card per case and a page per case.

A case page shows the last verdicts, each variant's captured output, captured errors, measured
errors, the broken -> fixed diff of every declared pair, the version matrix, when and where it
was last verified (CPU and CUDA), and the README, from the case folders and the JSON reports.
Every page links relatively, so the site works from file:// as well as from any static server.
"""

from __future__ import annotations

import datetime
import difflib
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import jinja2
import markdown
import pygments
from markupsafe import Markup
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from shared.harness.case import FAMILIES, SILENT_FAILURES, Case, CaseError, Expectation
from shared.harness.catalog import case_names, load_case
from shared.harness.explain import catalog_index
from shared.harness.kinds import SKIPPED, kind_of, order, stylesheet
from shared.harness.lines import verdict_cells
from shared.harness.matrix import Row, all_rows, flip_text, flips, stored_bisections
from shared.harness.paths import CASES_DIR, CUDA_DIR, MATRIX_DIR, RUNS_DIR
from shared.harness.report import CaseReport, Verdict
from shared.harness.site.timeline import timeline_svg
from shared.hazards import FINDERS, HAZARDS

TEMPLATES_DIR = Path(__file__).with_name("templates")
# Written into every built site: `build` only ever wipes a folder that holds it.
SITE_MARKER = ".gallery-site"
# Case files copied next to the case page, so the README's relative links keep working.
SOURCE_PATTERNS = ("*.py", "*.toml", "*.md")
DIFF_CONTEXT_LINES = 5


class SiteError(Exception):
    """The site cannot be built or checked; the message says why."""


# ---------------------------------------------------------------------------------------------
# build


@dataclass
class RunSummary:
    """What the index and a case page say about one recorded run."""

    finished: str
    device: str
    versions: str
    counts: list[tuple[str, int]]


@dataclass
class DiffRow:
    """One row of the side-by-side diff; kind 'skip' stands for `skipped` unchanged lines."""

    kind: str
    old_number: int | None = None
    old_line: Markup = Markup()
    new_number: int | None = None
    new_line: Markup = Markup()
    skipped: int = 0


@dataclass
class MatrixTable:
    variants: list[str]
    rows: list[dict]  # {"set", "versions", "cells": {variant: matrix row}}


@dataclass
class FixDiff:
    """A declared broken -> fixed pair and its side-by-side diff."""

    broken: str
    fixed: str
    rows: list[DiffRow]


@dataclass
class CasePage:
    case: Case
    issue_label: str
    last_run: RunSummary | None
    cuda_run: RunSummary | None
    # {"name", "script", "expected", "fixes", "entry": Verdict or None, "cells": its VerdictCells}
    variants: list[dict]
    errors: list[dict]  # {"variant", "type", "message", "raised_in", "culprit"}
    warnings: list[dict]  # {"variant", "text"}
    checks: list[dict]  # {"variant", **check}
    measurements: list[dict]  # {"variant", **measurement}: symptoms of silent failures
    producers: list[dict]  # {"variant", "description"}: where a silent variant's inf/NaN began
    audits: list[dict]  # {"variant", "found": [where: detail]}: the case's hazard, per variant
    outputs: list[dict]  # {"variant", "tail"}: what each variant printed, last lines
    matrix: MatrixTable | None
    flips: list[str]
    timeline: Markup  # the dated sweep's verdicts as a picture (empty without dated runs)
    diffs: list[FixDiff]
    readme: Markup
    files: list[str]

    @property
    def silent(self) -> bool:
        """Whether a documented failure of the case raises nothing (a symptom, a warning)."""
        return any(v.expectation.expect in SILENT_FAILURES for v in self.case.variants)


def build(
    out: Path,
    runs_dir: Path = RUNS_DIR,
    matrix_dir: Path = MATRIX_DIR,
    cuda_dir: Path = CUDA_DIR,
    cases_dir: Path = CASES_DIR,
) -> list[str]:
    """Write the site into ``out`` (replacing an earlier build); return the pages written.

    A case whose metadata does not load fails the build, with the error the CLI gives.
    """
    try:
        cases = [load_case(name, cases_dir) for name in case_names(cases_dir)]
    except CaseError as exc:
        raise SiteError(str(exc)) from None
    if not cases:
        raise SiteError(f"no case under {cases_dir}; nothing to build")

    try:
        rows, bisections = all_rows(matrix_dir), stored_bisections(matrix_dir)
    except (ValueError, TypeError, KeyError) as exc:
        raise SiteError(f"{matrix_dir}: a stored matrix report does not load: {exc}") from None
    case_flips = flips(rows, bisections)
    pages = [
        case_page(
            case,
            report=read_report(runs_dir / f"{case.name}.json"),
            cuda_report=read_report(cuda_dir / f"{case.name}.json"),
            matrix=[row for row in rows if row.case == case.name],
            case_flips=[flip for flip in case_flips if flip["case"] == case.name],
        )
        for case in cases
    ]
    _clear(out)
    templates = _environment()
    written = ["index.html"]
    by_family = {family: [p for p in pages if p.case.family == family] for family in FAMILIES}
    families = [(family, found) for family, found in by_family.items() if found]
    index_html = templates.get_template("index.html").render(
        root="", pages=pages, families=families, family_about=FAMILIES
    )
    _write(out / "index.html", index_html)
    # The search box's data, a script (not JSON): pages opened from file:// may not fetch.
    _write(out / "search-index.js", f"window.GALLERY_INDEX = {catalog_index(cases, matrix_dir)};\n")
    shutil.copyfile(TEMPLATES_DIR / "search.js", out / "search.js")
    matrix_html = templates.get_template("matrix.html").render(root="../", pages=pages)
    _write(out / "matrix" / "index.html", matrix_html)
    written.append("matrix/index.html")
    for page in pages:
        folder = out / page.case.name
        html = templates.get_template("case.html").render(root="../", page=page)
        _write(folder / "index.html", html)
        for name in page.files:
            shutil.copyfile(page.case.folder / name, folder / name)
        written.append(f"{page.case.name}/index.html")
    _write(out / "style.css", site_stylesheet())
    code_style = HtmlFormatter(style="friendly", nobackground=True).get_style_defs(".code")
    _write(out / "pygments.css", code_style)
    (out / SITE_MARKER).touch()
    return written


def case_page(
    case: Case,
    report: CaseReport | None,
    cuda_report: CaseReport | None,
    matrix: list[Row],
    case_flips: list[dict],
) -> CasePage:
    entries = {verdict.variant: verdict for verdict in (report.variants if report else [])}
    files = sorted(
        {path.name for pattern in SOURCE_PATTERNS for path in case.folder.glob(pattern)}
        - {"__init__.py"}
    )
    variants = [
        {
            "name": variant.name,
            "script": variant.script.name if variant.script.name in files else "",
            "expected": documented(variant.expectation),
            "fixes": variant.fixes,
            "entry": entries.get(variant.name),
            "cells": verdict_cells(entries[variant.name]) if variant.name in entries else None,
        }
        for variant in case.variants
    ]
    return CasePage(
        case=case,
        issue_label=issue_label(case.issue),
        last_run=run_summary(report),
        cuda_run=run_summary(cuda_report),
        variants=variants,
        errors=[
            captured_error(name, verdict)
            for name, verdict in entries.items()
            if verdict.error or verdict.culprit
        ],
        warnings=[
            {"variant": name, "text": warning.text}
            for name, verdict in entries.items()
            for warning in verdict.warnings
        ],
        checks=[
            {"variant": name, **check}
            for name, verdict in entries.items()
            for check in verdict.checks
        ],
        measurements=[
            {"variant": name, **measured}
            for name, verdict in entries.items()
            for measured in verdict.measurements
        ],
        producers=[
            {"variant": name, "description": verdict.producer["description"]}
            for name, verdict in entries.items()
            if verdict.producer
        ],
        audits=[
            {
                "variant": name,
                "found": [
                    f"{h['where']}: {h['detail']}"
                    for h in verdict.hazards
                    if h["kind"] == case.hazard
                ],
            }  # fmt: skip
            for name, verdict in entries.items()
            if case.hazard and verdict.kind != SKIPPED
        ],
        outputs=[
            {"variant": name, "tail": verdict.output_tail}
            for name, verdict in entries.items()
            if verdict.output_tail
        ],
        matrix=matrix_table(matrix, [v.name for v in case.variants]) if matrix else None,
        flips=[flip_text(flip) for flip in case_flips],
        timeline=timeline_svg(matrix, [v.name for v in case.variants]),
        diffs=[
            FixDiff(v.fixes, v.name, _diff(case, v.fixes, v.name)) for v in case.variants if v.fixes
        ],
        readme=_readme(case.folder / "README.md"),
        files=files,
    )


def documented(expectation: Expectation) -> str:
    """What a variant is documented to do, in a few words."""
    if expectation.expect == "error":
        return f"raises {expectation.error}"
    if expectation.expect == "symptom":
        return f"raises nothing; measured {expectation.symptom} {expectation.threshold_text}"
    if expectation.expect == "warning":
        return f"raises nothing; warns {expectation.warning}"
    if expectation.expect == "absent":
        return "unaffected here"
    return "passes"


def run_summary(report: CaseReport | None) -> RunSummary | None:
    if report is None:
        return None
    gpus = len(report.cuda_devices)
    versions = {"Python": report.python, **report.versions}
    kinds = Counter(verdict.kind for verdict in report.variants)
    return RunSummary(
        finished=format_time(report.finished),
        device=f"CUDA ({gpus} × {report.cuda_devices[0]})" if gpus else "CPU",
        versions=" · ".join(f"{name} {ver or 'not installed'}" for name, ver in versions.items()),
        counts=sorted(kinds.items(), key=lambda item: order(item[0])),
    )


def matrix_table(rows: list[Row], case_variants: list[str]) -> MatrixTable:
    """The matrix's rows of one case as a set x variant table."""
    seen = [row.variant for row in rows]
    variants = [v for v in case_variants if v in seen] + [
        v for v in dict.fromkeys(seen) if v not in case_variants
    ]
    by_set: dict[str, dict] = {}
    for row in rows:
        entry = by_set.setdefault(row.set, {"set": row.set, "versions": "", "cells": {}})
        entry["cells"][row.variant] = row
        entry["versions"] = entry["versions"] or " · ".join(
            f"{name} {version}" for name, version in row.versions.items()
        )
    return MatrixTable(variants=variants, rows=list(by_set.values()))


def captured_error(variant: str, verdict: Verdict) -> dict:
    """The error a variant raised, where, and the culprit tensor when the report names one."""
    error = verdict.error
    return {
        "variant": variant,
        "type": error.type if error else "",
        "message": error.message if error else "",
        "raised_in": error.raise_site if error else "",
        "culprit": (verdict.culprit or {}).get("description", ""),
    }


def issue_label(url: str) -> str:
    """'issue #131' for a GitHub-style issue or pull request URL, else the URL itself."""
    found = re.search(r"/(issues|pull)/(\d+)", url)
    if not found:
        return url
    return f"{'issue' if found.group(1) == 'issues' else 'pull request'} #{found.group(2)}"


def format_time(iso: str) -> str:
    try:
        moment = datetime.datetime.fromisoformat(iso)
    except ValueError:
        return iso or "unknown time"
    if moment.tzinfo:
        moment = moment.astimezone(datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M") + (" UTC" if moment.tzinfo else "")


def side_by_side(old: str, new: str) -> list[DiffRow]:
    """Changed hunks with context, each side highlighted by pygments, unchanged runs folded."""
    old_lines, new_lines = _highlighted(old), _highlighted(new)
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    rows: list[DiffRow] = []
    shown_until = 0  # old-side lines already shown or folded
    for group in matcher.get_grouped_opcodes(DIFF_CONTEXT_LINES):
        if group[0][1] > shown_until:
            rows.append(DiffRow("skip", skipped=group[0][1] - shown_until))
        for tag, i1, i2, j1, j2 in group:
            for offset in range(max(i2 - i1, j2 - j1)):
                i, j = i1 + offset, j1 + offset
                rows.append(
                    DiffRow(
                        tag,
                        old_number=i + 1 if i < i2 else None,
                        old_line=old_lines[i] if i < i2 else Markup(),
                        new_number=j + 1 if j < j2 else None,
                        new_line=new_lines[j] if j < j2 else Markup(),
                    )
                )
        shown_until = group[-1][2]
    if shown_until < len(old_lines) and rows:
        rows.append(DiffRow("skip", skipped=len(old_lines) - shown_until))
    return rows


def _highlighted(source: str) -> list[Markup]:
    # nowrap output closes every span at the end of its line, so it splits cleanly per line.
    html = pygments.highlight(source, PythonLexer(stripnl=False), HtmlFormatter(nowrap=True))
    return [Markup(line) for line in html.splitlines()]


def _diff(case: Case, broken: str, fixed: str) -> list[DiffRow]:
    scripts = {variant.name: variant.script for variant in case.variants}
    old, new = (scripts[name].read_text(encoding="utf-8") for name in (broken, fixed))
    return side_by_side(old, new)


def _readme(path: Path) -> Markup:
    if not path.is_file():
        return Markup()
    text = path.read_text(encoding="utf-8")
    html = markdown.markdown(text, extensions=["fenced_code", "tables"])
    # A table of many library columns scrolls in its box; the page never does.
    html = html.replace("<table>", '<div class="table-box"><table>').replace(
        "</table>", "</table></div>")
    return Markup(html)


def read_report(path: Path) -> CaseReport | None:
    """The case report at ``path``, or None when there is none."""
    try:
        return CaseReport.read(path)
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, KeyError) as exc:
        raise SiteError(f"{path}: not a gallery report: {exc}") from None


def verdict_class(kind: str) -> str:
    return f"verdict {kind_of(kind).css_class}"


def site_stylesheet() -> str:
    """The site's stylesheet: the template's, then each verdict badge's colours (kinds.py)."""
    css = (TEMPLATES_DIR / "style.css").read_text(encoding="utf-8")
    generated = "/* verdict badge colours: generated from shared/harness/kinds.py */"
    return f"{css.rstrip()}\n\n{generated}\n{stylesheet()}"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["verdict_class"] = verdict_class
    env.globals.update(hazards=HAZARDS, finders=FINDERS)
    return env


def _clear(out: Path) -> None:
    if out.exists() and any(out.iterdir()):
        if not (out / SITE_MARKER).exists():
            raise SiteError(f"{out} is not empty and not a site built here; not overwriting it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
