"""The harness verdicts, on small synthetic variants (one of each kind), with both start methods.

Each synthetic variant is a real script run by the real harness in its own process; the tests
read the verdicts from the JSON report and the printed lines.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import read_report, run_gallery

# A real dtype mismatch from a real torch op: the message the cases look for.
MISMATCH = """
import torch
torch.nn.functional.linear(
    torch.ones(2, 2), torch.ones(2, 2, dtype=torch.bfloat16), torch.ones(2, dtype=torch.bfloat16)
)
"""
CLOSE = """
import torch
from shared.checks import compare_to_reference
reference = torch.linspace(-1, 1, 16)
compare_to_reference("output", reference.to(torch.bfloat16), reference, dtype=torch.bfloat16)
"""
SCRIPTS = {
    "reproduced.py": MISMATCH,
    "wrong_message.py": "raise RuntimeError('Expected all tensors to be on the same device')",
    "wrong_type.py": (
        "raise ValueError('mat1 and mat2 must have the same dtype, but got Float and BFloat16')"
    ),
    "clean.py": "print('nothing to see')",
    "passed.py": CLOSE,
    "not_close.py": CLOSE.replace(
        "reference.to(torch.bfloat16)", "(reference + 1).to(torch.bfloat16)"
    ),
    "wrong_dtype.py": CLOSE.replace("reference.to(torch.bfloat16)", "reference.clone()"),
    "hangs.py": "import subprocess, time\nsubprocess.Popen(['sleep', '300'])\ntime.sleep(300)",
    "killed.py": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    "exits.py": "import os\nos._exit(3)",
}
ERROR = """
expect = "error"
error = "RuntimeError"
message = 'mat1 and mat2 must have the same dtype, but got Float and BFloat16'
"""
CASE_TOML = f"""
title = "Synthetic case"
summary = "every verdict once"
project = "tests"
issue = "https://example.invalid/1"

[[variant]]
name = "reproduced"
script = "reproduced.py"
{ERROR}
raised_in = "functional|reproduced"

[[variant]]
name = "wrong_message"
script = "wrong_message.py"
{ERROR}

[[variant]]
name = "wrong_type"
script = "wrong_type.py"
{ERROR}

[[variant]]
name = "wrong_site"
script = "reproduced.py"
{ERROR}
raised_in = "somewhere_else"

[[variant]]
name = "not_reproduced"
script = "clean.py"
{ERROR}

[[variant]]
name = "version_dependent"
script = "wrong_message.py"
{ERROR}
  [[variant.when]]
  torch = ">=1.0"
  message = 'on the same device'

[[variant]]
name = "passed"
script = "passed.py"
expect = "pass"

[[variant]]
name = "fix_raises"
script = "reproduced.py"
expect = "pass"

[[variant]]
name = "fix_checks_nothing"
script = "clean.py"
expect = "pass"

[[variant]]
name = "fix_not_close"
script = "not_close.py"
expect = "pass"

[[variant]]
name = "fix_wrong_dtype"
script = "wrong_dtype.py"
expect = "pass"

[[variant]]
name = "hangs"
script = "hangs.py"
expect = "pass"
timeout = 3

[[variant]]
name = "killed"
script = "killed.py"
{ERROR}

[[variant]]
name = "exits"
script = "exits.py"
expect = "pass"

[[variant]]
name = "needs_cuda"
script = "passed.py"
expect = "pass"
requires = {{ cuda = true, reason = "the message needs a GPU" }}

[[variant]]
name = "needs_old_torch"
script = "passed.py"
expect = "pass"
requires = {{ packages = {{ torch = "<1.0" }} }}
"""
EXPECTED = {
    "reproduced": "REPRODUCED",
    "wrong_message": "WRONG-ERROR",
    "wrong_type": "WRONG-ERROR",
    "wrong_site": "WRONG-ERROR",
    "not_reproduced": "NOT-REPRODUCED",
    "version_dependent": "REPRODUCED",
    "passed": "PASSED",
    "fix_raises": "FIX-FAILED",
    "fix_checks_nothing": "FIX-FAILED",
    "fix_not_close": "FIX-FAILED",
    "fix_wrong_dtype": "FIX-FAILED",
    "hangs": "TIMEOUT",
    "killed": "CRASHED",
    "exits": "CRASHED",
    "needs_cuda": "SKIPPED",
    "needs_old_torch": "SKIPPED",
}


def write_case(cases_dir: Path, name: str, toml: str, scripts: dict[str, str]) -> None:
    folder = cases_dir / name
    folder.mkdir(parents=True)
    (folder / "case.toml").write_text(toml, encoding="utf-8")
    for file_name, source in scripts.items():
        (folder / file_name).write_text(textwrap.dedent(source), encoding="utf-8")


@pytest.fixture(scope="module", params=["fork", "spawn"])
def synthetic_run(request, tmp_path_factory):
    cases_dir = tmp_path_factory.mktemp("cases")
    write_case(cases_dir, "synthetic", CASE_TOML, SCRIPTS)
    report_dir = tmp_path_factory.mktemp("report")
    run = run_gallery(
        "synthetic", "--cases-dir", str(cases_dir), "--jobs", "2",
        report_dir=report_dir, env={"GALLERY_START": request.param},
    )  # fmt: skip
    return run, read_report(report_dir, "synthetic")


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_each_verdict(synthetic_run, variant):
    _, report = synthetic_run
    assert report[variant]["verdict"] == EXPECTED[variant], report[variant]


def test_anomalies_fail_the_run_and_are_named(synthetic_run):
    run, _ = synthetic_run
    assert run.returncode == 1
    assert "gallery: FAILED" in run.stdout
    assert "NOT AS DOCUMENTED" in run.stdout
    for name in ("wrong_message WRONG-ERROR", "hangs TIMEOUT", "killed CRASHED"):
        assert name in run.stdout


def test_details_say_why(synthetic_run):
    _, report = synthetic_run
    assert "Expected all tensors to be on the same device" in report["wrong_message"]["detail"]
    assert "type ValueError, not RuntimeError" in report["wrong_type"]["detail"]
    assert "not raised in 'somewhere_else'" in report["wrong_site"]["detail"]
    assert report["not_reproduced"]["detail"].startswith("ran clean; expected RuntimeError")
    assert "checked nothing" in report["fix_checks_nothing"]["detail"]
    assert "expected dtype torch.bfloat16, got torch.float32" in report["fix_wrong_dtype"]["detail"]
    assert "Tensor-likes are not close" in report["fix_not_close"]["detail"]
    assert "no result within 3 s" in report["hangs"]["detail"]
    assert "died by SIGKILL" in report["killed"]["detail"]
    assert "exited with code 3" in report["exits"]["detail"]
    assert (
        report["needs_cuda"]["detail"]
        == "needs CUDA, no CUDA device here (the message needs a GPU)"
    )
    assert report["needs_old_torch"]["detail"].startswith("needs torch<1.0, found ")


def test_reproduced_records_the_real_error(synthetic_run):
    _, report = synthetic_run
    error = report["reproduced"]["error"]
    assert error["type"] == "RuntimeError"
    assert error["message"] == "mat1 and mat2 must have the same dtype, but got Float and BFloat16"
    assert report["reproduced"]["device"] == "cpu"


def test_passed_records_the_measured_error(synthetic_run):
    _, report = synthetic_run
    (check,) = report["passed"]["checks"]
    assert check["dtype"] == "bfloat16"
    assert 0 < check["max_abs_err"] <= check["atol"]


def test_skips_are_shown_with_their_reason(synthetic_run):
    run, _ = synthetic_run
    skipped = [line for line in run.stdout.splitlines() if line.strip().startswith("SKIPPED")]
    assert len(skipped) == 2
    assert all("needs " in line for line in skipped)
    assert "2 skipped" in run.stdout


def test_all_documented_case_exits_zero(tmp_path):
    toml = CASE_TOML.split('[[variant]]\nname = "wrong_message"')[0] + (
        '[[variant]]\nname = "passed"\nscript = "passed.py"\nexpect = "pass"\n'
    )
    write_case(tmp_path / "cases", "good", toml, SCRIPTS)
    run = run_gallery("good", "--cases-dir", str(tmp_path / "cases"), report_dir=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "gallery: OK (2 as documented, 0 anomalies, 0 skipped)" in run.stdout


def test_unknown_case_is_a_clear_error(tmp_path):
    run = run_gallery("no-such-case", report_dir=tmp_path)
    assert run.returncode == 2
    assert "unknown case 'no-such-case'; known cases: " in run.stderr
    assert "minicpm" in run.stderr


def test_malformed_case_is_a_clear_error(tmp_path):
    write_case(
        tmp_path / "cases",
        "typo",
        CASE_TOML.replace('expect = "pass"', 'expects = "pass"', 1),
        SCRIPTS,
    )
    run = run_gallery("typo", "--cases-dir", str(tmp_path / "cases"), report_dir=tmp_path)
    assert run.returncode == 2
    assert "unknown key(s) ['expects']" in run.stderr


def test_only_runs_the_named_variants(tmp_path):
    run = run_gallery("minicpm", "--only", "fixed", report_dir=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert list(read_report(tmp_path, "minicpm")) == ["fixed"]
    unknown = run_gallery("minicpm", "--only", "no_such_variant", report_dir=tmp_path)
    assert unknown.returncode == 2
    assert "no variant named ['no_such_variant']" in unknown.stderr
