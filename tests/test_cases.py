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
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT, read_report, run_gallery

from shared.harness.catalog import case_names, load_case
from shared.harness.report import PASSED, REPRODUCED, SKIPPED, UNAFFECTED

CASES = {name: load_case(name) for name in case_names()}
VARIANTS = [(case, variant.name) for case in CASES.values() for variant in case.variants]
PAIRS = [(case, variant) for case in CASES.values() for variant in case.variants if variant.fixes]
# A fix is a small change: the diff of a declared pair, docstrings included.
MAX_CHANGED_LINES = 15
DOCUMENTED = {"error": REPRODUCED, "symptom": REPRODUCED, "warning": REPRODUCED,
              "pass": PASSED, "absent": UNAFFECTED}  # fmt: skip


def ids(param) -> str:
    return getattr(param, "name", str(param))


@pytest.fixture(scope="session")
def case_runs(tmp_path_factory):
    """One harness run per case, made when a test first asks for it, shared by the rest."""
    runs = {}

    def run_of(name: str):
        if name not in runs:
            report_dir = tmp_path_factory.mktemp(name)
            run = run_gallery(name, report_dir=report_dir)
            text = (report_dir / f"{name}.json").read_text(encoding="utf-8")
            assert str(ROOT) not in text, "a report holds an absolute path of this machine"
            runs[name] = run, read_report(report_dir, name), json.loads(text)["versions"]
        return runs[name]

    return run_of


@pytest.mark.parametrize("case", CASES.values(), ids=ids)
def test_each_case_runs_as_documented(case, case_runs):
    run, report, _ = case_runs(case.name)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert list(report) == [variant.name for variant in case.variants]
    assert f"=> {case.name}: " in run.stdout


@pytest.mark.parametrize(("case", "variant_name"), VARIANTS, ids=ids)
def test_variant_verdict(case, variant_name, case_runs):
    _, report, versions = case_runs(case.name)
    verdict = report[variant_name]
    if verdict["kind"] == SKIPPED:  # never a pass: the reason is the test's outcome
        pytest.skip(f"{case.name}/{variant_name}: {verdict['detail']}")
    variant = next(v for v in case.variants if v.name == variant_name)
    expectation = variant.expectation_for(versions, verdict["device"])
    assert verdict["kind"] == DOCUMENTED[expectation.expect], verdict["detail"]
    if expectation.expect == "pass":  # each numeric check recorded what it compared
        assert all("dtype" in check for check in verdict["checks"] if "max_abs_err" in check)
    if expectation.expect in ("symptom", "warning"):
        assert verdict["silent"] and verdict["detail"].startswith("raises nothing")


SILENT = [(case, v) for case in CASES.values() for v in case.variants if v.may_fail_silently]


@pytest.mark.parametrize(("case", "variant"), SILENT, ids=ids)
def test_a_silent_failure_names_its_first_inf_or_nan_producer(case, variant, case_runs):
    """A variant whose failure raises nothing is watched for the first module that turned
    finite inputs into inf/NaN: an overflow names it, a loss of precision says there was none."""
    _, report, versions = case_runs(case.name)
    verdict = report[variant.name]
    if verdict["kind"] == SKIPPED:
        pytest.skip(f"{case.name}/{variant.name}: {verdict['detail']}")
    producer = verdict["producer"]
    assert producer and producer["description"], verdict
    nan_symptom = "NaN" in verdict["detail"] or "nan" in verdict["detail"]
    if verdict["kind"] == REPRODUCED and (nan_symptom or case.family == "overflow"):
        assert producer["module"], f"an inf/NaN failure with no producer named: {producer}"
        assert "inf/NaN, from finite" in producer["description"]


AUDITED = [(case, v) for case in CASES.values() for v in case.variants if v.audit_kinds]


@pytest.mark.parametrize(("case", "variant"), AUDITED, ids=ids)
def test_the_audit_flags_the_broken_models_and_passes_the_fixed_ones(case, variant, case_runs):
    """The hazards the harness records for a variant (shared.culprit: in the models, pipelines
    and optimizers it ends with, and seen while it ran): the case's hazard is found where
    case.toml says flagged (or the kind it names), and not where it says clean."""
    _, report, versions = case_runs(case.name)
    verdict = report[variant.name]
    if verdict["kind"] == SKIPPED:
        pytest.skip(f"{case.name}/{variant.name}: {verdict['detail']}")
    kinds = {hazard["kind"] for hazard in verdict["hazards"]}
    audit = variant.audit_for(versions, verdict["device"])
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


def test_no_case_imports_the_harness():
    offenders = []
    for path in sorted((ROOT / "cases").rglob("*.py")):
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
    assert not offenders, f"cases must not import the harness: {offenders}"


def _by_hand(script) -> tuple[str, str]:
    """Run a variant as a learner does, from the repository root, nothing installed; return the
    verdict of its last line and the line."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GALLERY_HARNESS")}
    run = subprocess.run([sys.executable, str(script.relative_to(ROOT))], cwd=ROOT,
                         capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    # The line ends stdout (a clean run) or stderr (after the traceback), whatever the other
    # stream printed (library warnings, exit messages).
    ends = [next((line for line in reversed(out.splitlines()) if line.strip()), "")
            for out in (run.stdout, run.stderr)]  # fmt: skip
    last = next((line for line in ends if line.startswith("gallery verdict:")), " | ".join(ends))
    found = re.match(r"gallery verdict: ([A-Z-]+)", last)
    return (found.group(1) if found else ""), last


@pytest.mark.parametrize("case", CASES.values(), ids=ids)
def test_a_variant_run_by_hand_ends_with_the_verdict_the_harness_gives(case, case_runs):
    """`python cases/<case>/<variant>.py` works without installing the project and ends with one
    line saying what the harness says (two at a time: each is a fresh interpreter)."""
    _, report, _ = case_runs(case.name)
    ran = [v for v in case.variants if report[v.name]["kind"] != SKIPPED]
    if not ran:
        pytest.skip(f"{case.name}: every variant is skipped here")
    with ThreadPoolExecutor(max_workers=2) as pool:
        by_hand = list(pool.map(lambda variant: _by_hand(variant.script), ran))
    for variant, (kind, last) in zip(ran, by_hand, strict=True):
        assert kind == report[variant.name]["kind"], f"{variant.name}: {last!r}"


CUDA_ONLY = [
    (case, variant) for case in CASES.values() for variant in case.variants if variant.requires.cuda
]


@pytest.mark.parametrize(("case", "variant"), CUDA_ONLY, ids=ids)
def test_a_cuda_only_variant_run_by_hand_without_cuda_says_so(case, variant):
    """A learner running the script by hand must never see a green run where it cannot work."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("the claim is about machines without CUDA")
    run = subprocess.run(
        [sys.executable, str(variant.script)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert run.returncode != 0, run.stdout[-2000:]
    assert "CUDA" in run.stdout + run.stderr
