"""The minicpm case through the harness: broken variants fail as documented, fixes are right."""

from __future__ import annotations

import shutil

import pytest
from conftest import ROOT, read_report, run_gallery

MESSAGE = "mat1 and mat2 must have the same dtype, but got Float and BFloat16"
FIXES = ("fixed", "fixed_per_component", "fixed_autocast")


@pytest.fixture(scope="module")
def minicpm(tmp_path_factory):
    report_dir = tmp_path_factory.mktemp("report")
    run = run_gallery("minicpm", report_dir=report_dir)
    assert run.returncode == 0, run.stdout + run.stderr
    return run, read_report(report_dir, "minicpm")


@pytest.mark.parametrize("variant", ["broken", "broken_trainer"])
def test_broken_variants_raise_in_the_resampler_attention(minicpm, variant):
    _, report = minicpm
    result = report[variant]
    assert result["verdict"] == "REPRODUCED"
    assert result["error"]["type"] == "RuntimeError"
    assert result["error"]["message"] == MESSAGE
    frames = "\n".join(result["error"]["frames"])
    assert "tiny_minicpmv.py:forward" in frames  # the resampler's forward ...
    assert "functional.py:multi_head_attention_forward" in frames  # ... into torch's MHA


@pytest.mark.parametrize("variant", FIXES)
def test_fixes_match_the_float32_reference_in_bfloat16(minicpm, variant):
    _, report = minicpm
    result = report[variant]
    assert result["verdict"] == "PASSED"
    (check,) = result["checks"]
    assert check["dtype"] == "bfloat16"
    assert 0 < check["max_abs_err"] <= check["atol"] == 0.05


def test_trainer_control_is_masked_by_autocast(minicpm):
    _, report = minicpm
    result = report["control_trainer_forward"]
    assert result["verdict"] == "PASSED"
    loss_check = next(c for c in result["checks"] if c["label"] == "first-step loss")
    assert loss_check["max_abs_err"] <= loss_check["atol"]


def test_output_names_device_and_verdicts(minicpm):
    run, _ = minicpm
    lines = run.stdout.splitlines()
    assert lines[0].startswith("Python 3.") and "torch 2." in lines[0]
    broken = next(line for line in lines if line.strip().startswith("REPRODUCED     broken "))
    assert " cpu " in broken or " cuda " in broken
    assert MESSAGE in broken
    assert "gallery: OK (6 as documented, 0 anomalies, 0 skipped)" in run.stdout


@pytest.mark.parametrize(
    ("script", "replacement", "verdict"),
    [
        ("fixed.py", "broken.py", "FIX-FAILED"),  # the "fix" is the broken program
        ("broken.py", "fixed.py", "NOT-REPRODUCED"),  # the bug no longer happens
    ],
)
def test_a_swapped_variant_fails_the_run(tmp_path, script, replacement, verdict):
    cases_dir = tmp_path / "cases"
    shutil.copytree(ROOT / "cases" / "minicpm", cases_dir / "minicpm")
    shutil.copy(cases_dir / "minicpm" / replacement, cases_dir / "minicpm" / script)
    run = run_gallery("minicpm", "--cases-dir", str(cases_dir), report_dir=tmp_path)
    assert run.returncode == 1
    variant = script.removesuffix(".py")
    assert read_report(tmp_path, "minicpm")[variant]["verdict"] == verdict
    assert f"NOT AS DOCUMENTED: {variant} {verdict}" in run.stdout


@pytest.mark.parametrize("variant", ["broken", "broken_trainer"])
def test_culprit_is_the_resampler_attention(minicpm, variant):
    run, report = minicpm
    culprit = report[variant]["culprit"]
    assert culprit["module"] == "TinyMiniCPMV.resampler.attn"
    assert (culprit["role"], culprit["input_dtype"]) == ("query", "float32")
    assert (culprit["parameter"], culprit["parameter_dtype"]) == ("in_proj_weight", "bfloat16")
    assert f"culprit: {culprit['description']}" in run.stdout
    assert all(report[fix]["culprit"] is None for fix in FIXES)
