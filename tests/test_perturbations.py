"""A failure that raises nothing must not hang on one tuned number of its tiny model.

Every variant whose verdict here rests on a measured figure or a warning (a silent failure, or
its documented absence) is run again with another seed and with every knob of its tiny model
at each end of its realistic range (``shared.tiny_models.knob``); the verdict must not change.
"""

from __future__ import annotations

import importlib.metadata

import pytest
from conftest import read_report, run_gallery

from shared.harness.catalog import SILENT_FAILURES, VERSIONED_PACKAGES, case_names, load_case
from shared.harness.report import REPRODUCED, UNAFFECTED
from shared.tiny_models import PERTURB_VARIABLE, PERTURBATIONS


def _installed(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


VERSIONS = {name: _installed(name) for name in VERSIONED_PACKAGES}


def _measured(expectation) -> bool:
    """Whether the verdict rests on a figure or a warning rather than on an exception."""
    if expectation.expect in SILENT_FAILURES:
        return True
    return expectation.expect == "absent" and bool(expectation.symptom or expectation.warning)


SILENT = {
    name: [
        variant
        for variant in load_case(name).variants
        if _measured(variant.expectation_for(VERSIONS, "cpu"))
    ]
    for name in case_names()
}
RUNS = [
    (name, perturbation) for name, variants in SILENT.items() if variants
    for perturbation in PERTURBATIONS
]  # fmt: skip


def test_some_case_fails_silently():
    assert RUNS, "no silent variant found: the perturbation tests below check nothing"


@pytest.mark.parametrize(("case", "perturbation"), RUNS, ids=[f"{c}-{p}" for c, p in RUNS])
def test_a_silent_verdict_holds_under_perturbation(case, perturbation, tmp_path):
    variants = SILENT[case]
    only = [arg for variant in variants for arg in ("--only", variant.name)]
    run = run_gallery(case, *only, report_dir=tmp_path, env={PERTURB_VARIABLE: perturbation})
    report = read_report(tmp_path, case)
    for variant in variants:
        verdict = report[variant.name]
        expectation = variant.expectation_for(VERSIONS, verdict["device"])
        wanted = UNAFFECTED if expectation.expect == "absent" else REPRODUCED
        assert verdict["kind"] == wanted, (
            f"{case}/{variant.name} under {PERTURB_VARIABLE}={perturbation}: {verdict['detail']}"
            f"\n{run.stdout[-3000:]}"
        )
        knobs = verdict["knobs"]
        assert "seed" in knobs, f"{case}/{variant.name}: build the tiny model with tiny_seed()"
        assert set(knobs) - {"seed"}, (
            f"{case}/{variant.name}: name the tiny model's arbitrary scale with knob(...)"
        )
