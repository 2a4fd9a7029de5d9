"""Every case of the catalog, through the harness: one test per case and variant.

Written once and instantiated per catalog entry (as diffusers' pipeline test mixin and
PyTorch's per-device test templates do): what is specific to a case — messages, where they are
raised, the culprit module, symptom thresholds, version and device conditions — is declared in
its case.toml, where the matrix checks it too, and the harness judges it. These tests assert
the judgement, the layout rules every case follows, and what a learner sees by hand.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT
from helpers import run_by_hand

from shared.harness.by_hand import judge_by_hand, recorded_result
from shared.harness.catalog import case_names, load_case
from shared.harness.lines import PREFIX, by_hand_line
from shared.harness.report import Verdict
from shared.harness.kinds import (
    EXPECTED_KINDS,
    PASSED,
    REPRODUCED,
    SKIPPED,
    UNAFFECTED,
)
from shared.harness.steps import stored_runs
from shared.harness.verdicts import Platform

CASES = {name: load_case(name) for name in case_names()}
RUN_VARIANTS = [(case, v) for case in CASES.values() for v in case.variants]
PAIRS = [(case, variant) for case in CASES.values() for variant in case.variants if variant.fixes]
# A fix is a small change: the diff of a declared pair, docstrings included.
MAX_CHANGED_LINES = 15
DOCUMENTED_KINDS = (*EXPECTED_KINDS, SKIPPED)  # SKIPPED: never a pass, always with its reason


def ids(param) -> str:
    return getattr(param, "name", str(param))


def _skip_if_skipped(case, verdict: dict) -> None:
    if verdict["kind"] == SKIPPED:  # never a pass: the reason is the test's outcome
        pytest.skip(f"{case.name}/{verdict['variant']}: {verdict['detail']}")


def test_the_whole_gallery_runs_as_documented_in_one_run(gallery):
    assert gallery.process.returncode == 0, gallery.evidence()
    assert "gallery: OK (" in gallery.process.stdout


def _not_as_documented(verdict: dict) -> str:
    """Why a variant's recorded verdict is not the documented behaviour (judge decided its kind:
    an anomaly is one), or "": one line naming the variant, its kind and its detail."""
    kind, detail = verdict["kind"], verdict["detail"]
    said = f"{verdict['variant']}: {kind}: {detail}"
    if kind not in DOCUMENTED_KINDS:
        return f"{said}  (not a documented kind: {', '.join(DOCUMENTED_KINDS)})"
    undated = [
        check for check in verdict["checks"] if "max_abs_err" in check and "dtype" not in check
    ]
    if kind == PASSED and undated:  # each numeric check records the dtype it compared
        return f"{said}  (a numeric check recorded no dtype: {undated[0]})"
    if verdict["silent"] and not detail.startswith("raises nothing"):
        return f"{said}  (a silent failure must say it raises nothing)"
    return ""


@pytest.mark.parametrize("case", CASES.values(), ids=ids)
def test_each_case_runs_as_documented(case, gallery):
    """Every variant's verdict is a documented kind (a skip with its reason included): the
    failure reproduced, the fix passed, the failure absent where documented so."""
    report = gallery.report(case.name)
    assert list(report) == [variant.name for variant in case.variants], gallery.evidence()
    summary = gallery.summary(case.name)
    assert summary and "NOT AS DOCUMENTED" not in summary, summary or gallery.evidence()
    problems = [problem for problem in map(_not_as_documented, report.values()) if problem]
    assert not problems, f"{case.name}:\n" + "\n".join(problems)
    text = (gallery.report_dir / f"{case.name}.json").read_text(encoding="utf-8")
    assert str(ROOT) not in text, "a report holds an absolute path of this machine"


SILENT = [(case, v) for case in CASES.values() for v in case.variants if v.may_fail_silently]


@pytest.mark.parametrize(("case", "variant"), SILENT, ids=ids)
def test_a_silent_failure_names_its_first_inf_or_nan_producer(case, variant, gallery):
    """A variant whose failure raises nothing is watched for the first module that turned
    finite inputs into inf/NaN: an overflow names it, a loss of precision says there was none."""
    verdict = gallery.report(case.name)[variant.name]
    _skip_if_skipped(case, verdict)
    producer = verdict["producer"]
    assert producer and producer["description"], verdict
    nan_symptom = "NaN" in verdict["detail"] or "nan" in verdict["detail"]
    if verdict["kind"] == REPRODUCED and (nan_symptom or case.family == "overflow"):
        assert producer["module"], f"an inf/NaN failure with no producer named: {producer}"
        assert "inf/NaN, from finite" in producer["description"]


AUDITED = [(case, v) for case in CASES.values() for v in case.variants if v.audit_kinds]


@pytest.mark.parametrize(("case", "variant"), AUDITED, ids=ids)
def test_the_audit_flags_the_broken_models_and_passes_the_fixed_ones(case, variant, gallery):
    """The hazards the harness records for a variant (shared.culprit: in the models, pipelines
    and optimizers it ends with, and seen while it ran): the case's hazard is found where
    case.toml says flagged (or the kind it names), and not where it says clean."""
    verdict = gallery.report(case.name)[variant.name]
    _skip_if_skipped(case, verdict)
    kinds = {hazard["kind"] for hazard in verdict["hazards"]}
    audit = variant.audit_for(gallery.versions(case.name), verdict["device"])
    assert (case.hazard_looked_for(audit) in kinds) == (audit != "clean"), verdict["hazards"]


@pytest.mark.parametrize(("case", "fixed"), PAIRS, ids=ids)
def test_the_diff_of_a_pair_is_the_fix(case, fixed):
    broken = next(v for v in case.variants if v.name == fixed.fixes)
    old = broken.script.read_text(encoding="utf-8").splitlines()
    new = fixed.script.read_text(encoding="utf-8").splitlines()
    changed = [
        line
        for line in difflib.unified_diff(old, new, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed, f"{fixed.script.name} is {broken.script.name}: no fix at all"
    assert len(changed) <= MAX_CHANGED_LINES, "\n".join(changed)


@pytest.mark.parametrize("case", CASES.values(), ids=ids)
def test_every_fixed_variant_declares_what_it_fixes(case):
    for variant in case.variants:
        if variant.name.startswith("fixed"):
            assert variant.fixes, f"{case.name}/{variant.name}: add fixes = '<broken variant>'"


def test_no_case_and_no_module_of_the_cases_api_imports_the_harness():
    """The harness imports ``shared`` (the cases' API), never the other way: no import loop. A
    run by hand asks ``python -m shared.harness.by_hand`` for its line, a command."""
    offenders = []
    api = [path for path in (ROOT / "shared").rglob("*.py") if "harness" not in path.parts]
    assert ROOT / "shared" / "record.py" in api
    for path in sorted((ROOT / "cases").rglob("*.py")) + sorted(api):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            if any(
                name == "shared.harness" or name.startswith("shared.harness.") for name in names
            ):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"cases and shared/ must not import the harness: {offenders}"


def _expected_line(case, variant, verdict: dict) -> str:
    """The line lines.by_hand_line makes of the harness's verdict, judged as a run by hand is."""
    recorded = Verdict.from_record(verdict)
    platform = Platform.installed()
    if recorded.kind != SKIPPED:
        recorded = judge_by_hand(variant, recorded_result(recorded), platform)
    return by_hand_line(case.name, variant, recorded, platform, stored_runs(case, variant))


@pytest.mark.parametrize(("case", "variant"), RUN_VARIANTS, ids=ids)
def test_the_run_by_hand_judges_the_recorded_run_as_the_harness_did(case, variant, gallery):
    """Every variant: the by-hand judgement (no culprit guard) of what the harness's run
    recorded is the harness's verdict, and lines.by_hand_line says it."""
    verdict = gallery.report(case.name)[variant.name]
    expected = _expected_line(case, variant, verdict)
    assert expected.startswith(f"{PREFIX} {verdict['kind']}: "), (expected, verdict["detail"])


# One variant of each expectation (the quickest the gallery run found), run as a learner does;
# a skipped one is run by hand below (every CUDA-only variant, on a machine without CUDA).
BY_HAND_KINDS = ("error", "symptom", "warning", "pass", "absent")
CUDA_ONLY = [
    (case, variant) for case in CASES.values() for variant in case.variants if variant.requires.cuda
]


def _quickest(expect: str, gallery) -> tuple | None:
    """(case, variant, verdict) of the quickest variant the gallery ran that expects ``expect``;
    only a variant a run by hand is judged as (the first of its case to run its script: two
    variants may read one run two ways, qlora-merge-4bit's broken and broken_weights)."""
    found = []
    for case in CASES.values():
        report = gallery.report(case.name)
        for variant in case.variants:
            verdict = report[variant.name]
            first_of_script = next(v for v in case.variants if v.script == variant.script)
            if verdict["kind"] == SKIPPED or first_of_script is not variant:
                continue
            expectation = variant.expectation_for(gallery.versions(case.name), verdict["device"])
            if expectation.expect == expect:
                found.append((verdict["seconds"], case, variant, verdict))
    return min(found, key=lambda sample: sample[0])[1:] if found else None


@pytest.fixture(scope="module")
def by_hand(gallery) -> dict:
    """The variants this module runs by hand, all in one pool (each run is mostly the import of
    torch and the libraries): the quickest of each expectation, and every CUDA-only variant the
    gallery run skipped. {script: (run, its verdict line)}."""
    quickest = [found for found in (_quickest(e, gallery) for e in BY_HAND_KINDS) if found]
    scripts = [variant.script for _, variant, _ in quickest] + [
        variant.script
        for case, variant in CUDA_ONLY
        if gallery.report(case.name)[variant.name]["kind"] == SKIPPED
    ]
    # One run per core this process may use, two at least, four at most (each holds ~1 GB).
    workers = min(4, max(2, len(os.sched_getaffinity(0))))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(scripts, pool.map(run_by_hand, scripts), strict=True))


@pytest.mark.parametrize("expect", BY_HAND_KINDS)
def test_a_variant_run_by_hand_ends_with_the_line_the_harness_gives(expect, gallery, by_hand):
    """`python cases/<case>/<variant>.py` works without installing the project and ends with the
    line lines.by_hand_line makes of the harness's verdict (figures aside: another thread count)."""
    found = _quickest(expect, gallery)
    assert found, f"no variant expects {expect!r} on this stack"
    case, variant, verdict = found
    _, last = by_hand[variant.script]
    expected = _expected_line(case, variant, verdict)
    assert _figures_aside(last) == _figures_aside(expected), f"{case.name}/{variant.name}"
    assert last.startswith(f"{PREFIX} {verdict['kind']}: "), last


def _figures_aside(text: str) -> str:
    """Figures as #, and a printed set's items in one order (torch prints a set of dtypes, whose
    order changes from one process to the next)."""
    text = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", text)
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m[1].split(", "))) + "}", text)


@pytest.mark.parametrize(("case", "variant"), CUDA_ONLY, ids=ids)
def test_a_cuda_only_variant_run_by_hand_without_cuda_says_so(case, variant, gallery, by_hand):
    """A learner must never see a green run where it cannot work: the script exits non-zero
    saying it needs CUDA, and ends with the harness's SKIPPED line and its reason."""
    verdict = gallery.report(case.name)[variant.name]
    if verdict["device"] == "cuda":
        pytest.skip("the claim is about machines without CUDA")
    assert verdict["kind"] == SKIPPED, verdict["detail"]
    run, last = by_hand[variant.script]
    assert run.returncode != 0, run.stdout[-2000:]
    assert "CUDA" in run.stdout + run.stderr
    assert last == _expected_line(case, variant, verdict)


# A failure no stored CPU run can show: bnb-quantized-to's move is refused only before
# transformers 4.45, and 4-bit on the CPU arrived in transformers 4.53: a GPU stack shows it.
FAILS_ONLY_ON_A_GPU_STACK = {("bnb-quantized-to", "broken_device")}


def test_a_failure_the_session_does_not_show_is_given_the_command_that_shows_it(gallery):
    """Every failing variant that ran clean in the session (UNAFFECTED) is followed by the one
    command that runs it where it fails: a stored set where it REPRODUCED on the CPU and that
    its case.toml documents it failing on (derived from `when` and the stored sets)."""
    from shared.harness.lines import failure_command
    from shared.harness.matrix import all_rows

    rows = tuple(all_rows())
    unaffected = [
        (case, variant)
        for case in CASES.values()
        for variant in case.variants
        if gallery.report(case.name).get(variant.name, {}).get("kind") == UNAFFECTED
    ]
    assert unaffected, "the pinned set shows every failure: nothing to check"  # fmt: skip
    for case, variant in unaffected:
        command = failure_command(case, variant, stored_runs(case, variant, rows))
        if (case.name, variant.name) in FAILS_ONLY_ON_A_GPU_STACK:
            assert command.startswith("no stored run shows it fail on the CPU; case.toml")
            continue
        found = re.match(r'to see it fail: nox -s "matrix\((?P<set>[^)]+)\)" -- (?P<case>\S+)',
                         command)  # fmt: skip
        assert found and found["case"] == case.name, (case.name, variant.name, command)
        there = [row for row in rows if (row.set, row.case, row.variant)
                 == (found["set"], case.name, variant.name)]  # fmt: skip
        assert there and there[0].verdict == REPRODUCED, (case.name, variant.name, found["set"])
        expectation = variant.expectation_for(there[0].versions, "cpu")
        assert expectation.expect in ("error", "symptom", "warning"), (case.name, variant.name)
        shown = gallery.process.stdout.split(f"\n{case.name}: ", 1)[1].split("  => ", 1)[0]
        assert command in shown, (case.name, variant.name)
