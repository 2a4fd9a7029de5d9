"""The harness verdicts, on small synthetic variants (one of each kind), with both start methods.

Each synthetic variant is a real script run by the real harness in its own process; the tests
read the verdicts from the JSON report and the printed lines.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, read_report, run_gallery
from helpers import case_toml, write_case

from shared.harness import ExitCode, UsageError

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
# A silent failure: the output is wrong, nothing raises; shared code measures it.
SILENT = """
import torch
from shared.checks import measure_error
reference = torch.linspace(-1, 1, 16)
measure_error("output error", (reference * 1000).to(torch.float16), reference)
"""
# NumPy warns when it casts NaN to an integer type (as diffusers' numpy_to_pil does).
WARNS = """
import numpy as np
np.array([np.nan]).astype("uint8")
"""
ORPHAN_SECONDS = "301.25"  # a sleep only the hangs variant starts: find it if it outlived us
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
    # Ignores SIGTERM, and so does the grandchild it leaves: only SIGKILL to the group ends them.
    "hangs.py": (
        "import signal, subprocess, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"subprocess.Popen(['sh', '-c', 'trap \"\" TERM; exec sleep {ORPHAN_SECONDS}'])\n"
        "time.sleep(300)\n"
    ),
    "killed.py": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    "culprit.py": "import torch\ntorch.nn.Linear(2, 2).to(torch.bfloat16)(torch.ones(1, 2))",
    "exits.py": "import os\nos._exit(3)",
    # Writes a clean, checked result, then the interpreter exits non-zero (as a crash in a
    # library's exit handler would): only a spawned interpreter runs atexit handlers.
    "exits_after_result.py": "import atexit, os\natexit.register(os._exit, 4)\n" + CLOSE,
    "silent.py": SILENT,
    "silent_healthy.py": SILENT.replace("* 1000", "* 1"),
    "silent_unmeasured.py": "print('measured nothing')",
    "raises_the_symptom.py": "raise RuntimeError('output error 1e3: the symptom')",
    "warns.py": WARNS,
    # A defect of the gallery's own code (a tiny model's helper), not the library's failure.
    "tiny_helper.py": "def first_table(tables):\n    return tables[0]\n",
    "gallery_bug.py": "from tiny_helper import first_table\nfirst_table([])",
    # Rank 1 outlives rank 0's failure: a rank that exits non-zero makes torchrun stop the rest.
    "rank0_raises.py": "import os, time\nif os.environ['RANK'] == '0':\n"
    + textwrap.indent(MISMATCH, "    ")
    + "else:\n    time.sleep(3)\n",
}
ERROR = """
expect = "error"
error = "RuntimeError"
message = 'mat1 and mat2 must have the same dtype, but got Float and BFloat16'
"""
CASE_TOML = case_toml(f"""
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
name = "gallery_bug"
script = "gallery_bug.py"
{ERROR}

[[variant]]
name = "fix_gallery_bug"
script = "gallery_bug.py"
expect = "pass"

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
name = "exits_after_result"
script = "exits_after_result.py"
expect = "pass"

[[variant]]
name = "silent"
script = "silent.py"
expect = "symptom"
symptom = "output error"
above = 10.0

[[variant]]
name = "silent_healthy"
script = "silent_healthy.py"
expect = "symptom"
symptom = "output error"
above = 10.0

[[variant]]
name = "silent_unmeasured"
script = "silent_unmeasured.py"
expect = "symptom"
symptom = "output error"
above = 10.0

[[variant]]
name = "raises_the_symptom"
script = "raises_the_symptom.py"
expect = "symptom"
symptom = "output error"
above = 10.0

[[variant]]
name = "unaffected"
script = "silent_healthy.py"
expect = "absent"
symptom = "output error"
above = 10.0

[[variant]]
name = "warns"
script = "warns.py"
expect = "warning"
warning = "RuntimeWarning"
message = 'invalid value encountered in cast'
issued_in = 'warns\\.py:3$'

[[variant]]
name = "warns_elsewhere"
script = "warns.py"
expect = "warning"
warning = "RuntimeWarning"
message = 'invalid value encountered in cast'
issued_in = 'diffusers/image_processor\\.py'

[[variant]]
name = "wrong_culprit"
script = "culprit.py"
{ERROR}
culprit = '^Model\\.other$'

[[variant]]
name = "right_culprit"
script = "culprit.py"
{ERROR}
culprit = '^Linear$'

[[variant]]
name = "ranks_disagree"
script = "rank0_raises.py"
launcher = "torchrun"
ranks = 2
{ERROR}

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
""")
EXPECTED = {
    "reproduced": "REPRODUCED",
    "wrong_message": "WRONG-ERROR",
    "wrong_type": "WRONG-ERROR",
    "wrong_site": "WRONG-ERROR",
    "not_reproduced": "NOT-REPRODUCED",
    "gallery_bug": "WRONG-ERROR",
    "fix_gallery_bug": "FIX-FAILED",
    "version_dependent": "REPRODUCED",
    "passed": "PASSED",
    "fix_raises": "FIX-FAILED",
    "fix_checks_nothing": "FIX-FAILED",
    "fix_not_close": "FIX-FAILED",
    "fix_wrong_dtype": "FIX-FAILED",
    "hangs": "TIMEOUT",
    "killed": "CRASHED",
    "exits": "CRASHED",
    "silent": "REPRODUCED",
    "silent_healthy": "NOT-REPRODUCED",
    "silent_unmeasured": "WRONG-ERROR",
    "raises_the_symptom": "WRONG-ERROR",
    "unaffected": "UNAFFECTED",
    "warns": "REPRODUCED",
    "warns_elsewhere": "NOT-REPRODUCED",
    "wrong_culprit": "WRONG-ERROR",
    "right_culprit": "REPRODUCED",
    "ranks_disagree": "NOT-REPRODUCED",
    "needs_cuda": "SKIPPED",
    "needs_old_torch": "SKIPPED",
}


@pytest.fixture(scope="module", params=["fork", "spawn"])
def synthetic_run(request, tmp_path_factory):
    cases_dir = tmp_path_factory.mktemp("cases")
    write_case(cases_dir, "synthetic", CASE_TOML, SCRIPTS)
    report_dir = tmp_path_factory.mktemp("report")
    run = run_gallery(
        "synthetic", "--cases-dir", str(cases_dir), "--jobs", "2",
        report_dir=report_dir, env={"GALLERY_START": request.param},
    )  # fmt: skip
    return run, read_report(report_dir, "synthetic"), request.param


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_each_verdict(synthetic_run, variant):
    _, report, _ = synthetic_run
    assert report[variant]["kind"] == EXPECTED[variant], report[variant]


def test_a_timed_out_variant_leaves_no_process_behind(synthetic_run):
    """SIGTERM, a grace period, then SIGKILL to the whole process group: the grandchild that
    ignores SIGTERM is gone too."""
    left = subprocess.run(["pgrep", "-f", f"sleep {ORPHAN_SECONDS}"], capture_output=True)
    assert left.returncode == 1, f"left running: {left.stdout.decode()}"


def test_a_clean_result_then_a_non_zero_exit_is_a_crash(synthetic_run):
    _, report, start = synthetic_run
    verdict = report["exits_after_result"]
    if start == "fork":  # a forked child leaves through os._exit: exit handlers never run
        assert verdict["kind"] == "PASSED", verdict
    else:
        assert verdict["kind"] == "CRASHED", verdict
        assert verdict["detail"] == "recorded a clean run, then exited with code 4"


def test_ranks_that_disagree_are_an_anomaly_naming_each_rank(synthetic_run):
    _, report, _ = synthetic_run
    detail = report["ranks_disagree"]["detail"]
    assert detail.startswith("ranks disagree: rank 0: REPRODUCED RuntimeError: mat1"), detail
    assert "rank 1: NOT-REPRODUCED ran clean" in detail


def test_silent_failures_are_measured_by_shared_code_and_labelled(synthetic_run):
    run, report, _ = synthetic_run
    silent = report["silent"]
    assert silent["silent"] and silent["detail"].startswith("raises nothing: output error")
    assert "failure is above 10" in silent["detail"]
    assert report["silent_healthy"]["detail"].startswith("no symptom: output error")
    assert "measured no 'output error'" in report["silent_unmeasured"]["detail"]
    # a hand-written raise that names the symptom is not the symptom
    assert report["raises_the_symptom"]["detail"].startswith("raised RuntimeError")
    assert "reproduced (2 raising nothing)" in run.stdout  # the symptom and the warning


def test_warnings_are_recorded_with_where_they_were_issued(synthetic_run):
    _, report, _ = synthetic_run
    (warning,) = report["warns"]["warnings"]
    assert warning["category"] == "RuntimeWarning"
    assert warning["issued_at"].endswith("warns.py:3")
    assert "saw: RuntimeWarning: invalid value" in report["warns_elsewhere"]["detail"]


def test_a_documented_culprit_is_checked(synthetic_run):
    _, report, _ = synthetic_run
    assert "(culprit Linear, documented /^Model\\.other$/)" in report["wrong_culprit"]["detail"]


def test_anomalies_fail_the_run_and_are_named(synthetic_run):
    run, _, _ = synthetic_run
    assert run.returncode == 1
    assert "gallery: FAILED" in run.stdout
    assert "NOT AS DOCUMENTED" in run.stdout
    for name in ("wrong_message WRONG-ERROR", "hangs TIMEOUT", "killed CRASHED"):
        assert name in run.stdout


def test_details_say_why(synthetic_run):
    _, report, _ = synthetic_run
    assert "Expected all tensors to be on the same device" in report["wrong_message"]["detail"]
    assert "type ValueError, not RuntimeError" in report["wrong_type"]["detail"]
    assert "not raised in 'somewhere_else'" in report["wrong_site"]["detail"]
    assert report["not_reproduced"]["detail"].startswith("ran clean; expected RuntimeError")
    for name in ("gallery_bug", "fix_gallery_bug", "wrong_type"):  # the gallery's, said so
        assert report[name]["detail"].startswith(
            "the gallery's code failed here, not the library: "
        ), report[name]["detail"]
    assert "IndexError: list index out of range" in report["gallery_bug"]["detail"]
    for name in ("fix_raises", "fix_not_close", "fix_wrong_dtype"):  # a library error, a check
        assert "the gallery's code failed" not in report[name]["detail"]
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
    _, report, _ = synthetic_run
    error = report["reproduced"]["error"]
    assert error["type"] == "RuntimeError"
    assert error["message"] == "mat1 and mat2 must have the same dtype, but got Float and BFloat16"
    assert report["reproduced"]["device"] == "cpu"


def test_passed_records_the_measured_error(synthetic_run):
    _, report, _ = synthetic_run
    (check,) = report["passed"]["checks"]
    assert check["dtype"] == "bfloat16"
    assert 0 < check["max_abs_err"] <= check["atol"]


def test_skips_are_shown_with_their_reason(synthetic_run):
    run, _, _ = synthetic_run
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


@pytest.mark.parametrize(
    ("library", "start"), [("peft", "fork"), ("peft", "spawn"), ("bitsandbytes", "fork")]
)
def test_an_installed_library_that_cannot_be_imported_stops_the_run(tmp_path, library, start):
    """Never a verdict: exit 2 naming the library, its version and the missing module, before
    any variant runs; forking, in the parent's preload (or a child, for a library the parent must
    not import); spawning, in a child. A stand-in package earlier on the path fails as peft 0.11
    did without setuptools."""
    shadow = tmp_path / "shadow" / library
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("import setuptools_not_installed_here\n")
    scripts = {"broken.py": f"import {library}\n", "fixed.py": f"import {library}\n"}
    toml = case_toml(
        '[[variant]]\nname = "broken"\nscript = "broken.py"\nexpect = "error"\n'
        'error = "RuntimeError"\nmessage = "x"\n'
        '[[variant]]\nname = "fixed"\nscript = "fixed.py"\nexpect = "pass"\n'
    )
    write_case(tmp_path / "cases", "imports", toml, scripts)
    run = run_gallery(
        "imports", "--cases-dir", str(tmp_path / "cases"), report_dir=tmp_path / "r",
        env={"PYTHONPATH": str(shadow.parent), "GALLERY_START": start},
    )  # fmt: skip
    assert run.returncode == 2, run.stdout + run.stderr
    version = importlib.metadata.version(library)
    assert (
        f"gallery: error: this environment: {library} {version} cannot be imported: no module "
        "named 'setuptools_not_installed_here'"
    ) in run.stderr
    assert "not a verdict" in run.stderr
    assert "install the package that provides 'setuptools_not_installed_here'" in run.stderr
    assert not (tmp_path / "r" / "imports.json").exists()


def test_only_runs_the_named_variants(tmp_path):
    """--only VARIANT (in every case named) or CASE/VARIANT; a case left with none is not run."""
    cases_dir = tmp_path / "cases"
    write_case(cases_dir, "synthetic", CASE_TOML, SCRIPTS)
    write_case(cases_dir, "other", CASE_TOML, SCRIPTS)
    run = run_gallery(
        "synthetic", "other", "--cases-dir", str(cases_dir), "--only", "passed",
        "--only", "other/unaffected", report_dir=tmp_path / "r",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert list(read_report(tmp_path / "r", "synthetic")) == ["passed"]
    assert list(read_report(tmp_path / "r", "other")) == ["passed", "unaffected"]
    alone = run_gallery(
        "synthetic", "other", "--cases-dir", str(cases_dir), "--only", "other/unaffected",
        report_dir=tmp_path / "alone",
    )  # fmt: skip
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert [path.name for path in (tmp_path / "alone").iterdir()] == ["other.json"]
    unknown = run_gallery(
        "synthetic", "--cases-dir", str(cases_dir), "--only", "no_such_variant",
        report_dir=tmp_path / "r",
    )  # fmt: skip
    assert unknown.returncode == 2
    assert "no variant named ['no_such_variant']" in unknown.stderr


def test_the_real_torchrun_command_line_reproduces_too(tmp_path):
    """GALLERY_START=spawn launches `python -m torch.distributed.run` itself (fresh rank
    processes; torchrun ends in ChildFailedError): each rank's own result carries the error."""
    run = run_gallery(
        "cogagent", "--only", "broken", report_dir=tmp_path, env={"GALLERY_START": "spawn"}
    )
    assert run.returncode == 0, run.stdout + run.stderr
    broken = read_report(tmp_path, "cogagent")["broken"]
    assert broken["kind"] == "REPRODUCED"
    assert broken["detail"].startswith(
        "all 2 ranks: RuntimeError: Input type (c10::Half) and bias type (float) should be the same"
    )


def test_variants_are_spawned_where_a_cuda_gpu_is_visible(monkeypatch):
    """The GPU is probed in a child before the parent imports anything, and where one is
    visible the variants are spawned: importing peft or transformers imports bitsandbytes, which
    initialises CUDA, and a child forked after that cannot use the GPU. GALLERY_START wins."""
    from shared.harness import steps
    from shared.harness.catalog import load_case
    from shared.harness.runner import start_method

    monkeypatch.delenv("GALLERY_START", raising=False)
    assert (start_method(cuda_visible=False), start_method(cuda_visible=True)) == ("fork", "spawn")
    order: list[str] = []

    def start_probe():
        order.append("probe")
        return lambda: ["NVIDIA Test GPU"]

    def unimportable(cases, method):
        order.append(method)
        raise UsageError("stop before anything runs")

    monkeypatch.setattr(steps, "start_cuda_probe", start_probe)
    monkeypatch.setattr(steps, "_unimportable", unimportable)
    for setting in (None, "fork"):
        if setting:
            monkeypatch.setenv("GALLERY_START", setting)
        with pytest.raises(UsageError):
            steps.run([load_case("minicpm")], 1, Path("unused"))
    assert order == ["probe", "spawn", "probe", "fork"]


def test_swapped_variants_of_a_real_case_fail_the_run(tmp_path):
    """Both swapped in one run: the "fix" is the broken program, and the bug no longer happens."""
    cases_dir = tmp_path / "cases"
    folder = cases_dir / "minicpm"
    shutil.copytree(ROOT / "cases" / "minicpm", folder)
    broken, fixed = (folder / "broken.py").read_text(), (folder / "fixed.py").read_text()
    (folder / "broken.py").write_text(fixed)
    (folder / "fixed.py").write_text(broken)
    run = run_gallery(
        "minicpm", "--cases-dir", str(cases_dir), "--only", "fixed", "--only", "broken",
        report_dir=tmp_path,
    )  # fmt: skip
    assert run.returncode == 1
    report = read_report(tmp_path, "minicpm")
    assert (report["fixed"]["kind"], report["broken"]["kind"]) == ("FIX-FAILED", "NOT-REPRODUCED")
    assert "NOT AS DOCUMENTED: broken NOT-REPRODUCED, fixed FIX-FAILED" in run.stdout


def test_a_harness_failure_is_an_internal_error_not_an_anomaly(tmp_path):
    """Exit 3, never 1: the matrix session accepts 1 (anomalies, reports whole) and collects."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    write_case(tmp_path / "cases", "synthetic", CASE_TOML, SCRIPTS)
    run = run_gallery(
        "synthetic", "--cases-dir", str(tmp_path / "cases"), "--only", "passed",
        report_dir=blocker / "reports",
    )  # fmt: skip
    assert run.returncode == 3, run.stdout + run.stderr
    assert "gallery: internal error: the harness failed" in run.stderr


def test_benchmark_sweep_dates_are_the_configured_ones():
    from shared.harness.benchmark import dates_to_measure
    from shared.harness.library_sets import sweep_dates

    assert dates_to_measure(None) == sweep_dates()
    first = sweep_dates()[0]
    assert dates_to_measure([first.isoformat()]) == [first]
    with pytest.raises(UsageError, match="not a sweep date: 2024-02-30"):
        dates_to_measure(["2024-02-30"])


def test_the_overhead_replays_a_model_call_under_the_autocast_it_ran_under(tmp_path):
    """A fix that is autocast (a bfloat16 model fed float32) fails replayed without it: the
    measured call is replayed under the CPU autocast it ran under."""
    import torch

    from shared.harness.overhead import case_model_call, replayed_under

    script = tmp_path / "fixed.py"
    script.write_text("import torch\n"
                      "model = torch.nn.Linear(4, 4).to(torch.bfloat16)\n"
                      "with torch.autocast('cpu', dtype=torch.bfloat16):\n"
                      "    model(torch.ones(2, 4))\n")  # fmt: skip
    module, args, kwargs, autocast = case_model_call(script)
    assert isinstance(module, torch.nn.Linear) and autocast == torch.bfloat16
    with pytest.raises(RuntimeError, match="dtype"):
        module(*args, **kwargs)
    with replayed_under(autocast):
        assert module(*args, **kwargs).dtype == torch.bfloat16


def test_the_overhead_times_the_case_model_not_a_call_before_it(tmp_path):
    """A caller's own embedding called before the model (transformers-v5-dtype's speech
    embedding) is not the case's model: the outermost call that runs the most modules is, the
    first that still runs (a float32 reference call, the model cast to bfloat16 after it, does
    not)."""
    import torch

    from shared.harness.overhead import case_model_call

    script = tmp_path / "fixed.py"
    script.write_text("import torch\n"
                      "embedding = torch.nn.Embedding(8, 4)\n"
                      "model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())\n"
                      "features = embedding(torch.tensor([1, 2]))\n"
                      "model(features)\n"
                      "model.to(torch.bfloat16)(features.to(torch.bfloat16))\n"
                      "torch.nn.Linear(4, 4)(torch.ones(1, 4))\n")  # fmt: skip
    module, args, kwargs, autocast = case_model_call(script)
    assert isinstance(module, torch.nn.Sequential) and autocast is None
    assert args[0].dtype == torch.bfloat16 and args[0].shape == (2, 4) and kwargs == {}


def test_the_overhead_waits_for_a_cuda_model_kernels(monkeypatch):
    """A kernel launch returns before the kernel runs, and the diagnosis reads each judged output
    back: a model on a CUDA device is timed pass and wait together, one on the CPU as it is."""
    import torch

    from shared.harness.overhead import model_device, timed_pass

    model = torch.nn.Linear(4, 4)
    assert model_device(model, (torch.ones(1, 4),), {}) == torch.device("cpu")
    assert model_device(torch.nn.ReLU(), (), {"input": torch.ones(1, device="meta")}).type == "meta"
    assert timed_pass(model, torch.device("cpu")) is model
    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device: events.append(("wait", device)))
    model.register_forward_hook(lambda *_: events.append("pass"))
    output = timed_pass(model, torch.device("cuda", 0))(torch.ones(1, 4))
    assert output.shape == (1, 4) and events == ["pass", ("wait", torch.device("cuda", 0))]


def test_a_diagnose_overhead_that_cannot_be_measured_is_an_error(tmp_path, capsys):
    """An environment that cannot import torch measures nothing: each row says so and the
    benchmark exits 2, never a table that reads as measured."""
    from shared.harness.benchmark import diagnose_figures

    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named torch' >&2\nexit 1\n")
    python.chmod(0o755)
    with pytest.raises(UsageError, match=r"could not be measured with .*\(t5-half\)"):
        diagnose_figures(["t5-half"], python)
    assert "t5-half                      NOT MEASURED (exit 1): ModuleNotFoundError" in (
        capsys.readouterr().out)


def test_the_diagnose_overhead_target_is_met_only_when_every_model_meets_it(tmp_path, capsys):
    """The summary's verdict is the issue's target, at most 1.5x on every model measured: a
    median under it with one model over it is MISSED, and that model is named."""
    from shared.harness.benchmark import diagnose_figures

    python = tmp_path / "python"

    def measured(figures: dict[str, float]) -> str:
        """What the summary says of a stand-in interpreter reporting these ratios."""
        python.write_text("#!/bin/sh\ncase \"$3\" in\n" + "".join(
            f"  {name}) echo '{{\"model\": \"M\", \"device\": \"cpu\", "
            f"\"fully_watched_calls\": 3, \"bare_s\": 1.0, \"diagnosed_s\": {ratio}, "
            f"\"every_call_s\": 2.0, \"call_through_s\": 1.3, \"hooks_only_s\": 1.1, "
            f"\"batch\": 1, \"batched_bare_s\": null, \"batched_diagnosed_s\": null}}' ;;\n"
            for name, ratio in figures.items()) + "esac\n")
        python.chmod(0o755)
        diagnose_figures(list(figures), python)
        return capsys.readouterr().out

    said = measured({"quick": 1.2, "slow": 1.7, "middling": 1.3})
    assert ("median 1.30, worst 1.70 (target <= 1.5 on every model: MISSED; over it: 1 of 3: "
            "slow)") in said
    said = measured({"quick": 1.2, "slow": 1.4, "middling": 1.3})
    assert "(target <= 1.5 on every model: met; over it: 0 of 3)" in said


@pytest.mark.parametrize(
    ("argv", "environment", "says"),
    [
        (["run", "no-such-case"], {}, "gallery: error: unknown case 'no-such-case'"),
        (["run", "minicpm", "--only", "nope"], {}, "gallery: error: no variant named ['nope']"),
        (["run", "minicpm", "--jobs", "0"], {}, "error: --jobs must be at least 1"),
        (["run", "minicpm"], {"GALLERY_START": "thread"},
         "gallery: error: GALLERY_START must be 'fork' or 'spawn', got 'thread'"),
        (["benchmark", "--repeat", "0"], {}, "--repeat: must be a whole number, at least 1"),
        (["benchmark", "--sweep-only", "--dates", "2024-02-30"], {},
         "gallery: error: not a sweep date: 2024-02-30"),
        (["benchmark", "--dates", "2024-02-30"], {}, "--dates measures the dated sweep"),
        (["benchmark", "--cases", "no-such-case"], {}, "gallery: error: unknown case"),
        (["matrix", "cases", "no-such-set"], {}, "no-such-set"),
        (["no-such-command"], {}, "invalid choice: 'no-such-command'"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_with_a_clear_error(argv, environment, says, monkeypatch, capsys):
    """Every command, whatever bad input it meets (arguments, an unknown case, a bad setting):
    ExitCode.USAGE_ERROR, never 1 (an anomaly) or 3, and a line saying what is wrong."""
    from shared.harness.cli import main

    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    assert code == ExitCode.USAGE_ERROR == 2, capsys.readouterr()
    assert says in capsys.readouterr().err


def test_a_readme_without_its_markers_is_bad_input(tmp_path, monkeypatch, capsys):
    from shared.harness import readme
    from shared.harness.cli import main

    unmarked = tmp_path / "README.md"
    unmarked.write_text("# a README someone cut the generated table out of\n", encoding="utf-8")
    monkeypatch.setattr(readme, "README", unmarked)
    assert main(["readme", "--check"]) == ExitCode.USAGE_ERROR
    error = capsys.readouterr().err
    assert error.startswith("gallery: error: ") and "README.md needs the two marker lines" in error


def test_a_factory_that_is_not_there_is_bad_input_for_the_culprit_command():
    """`python -m shared.culprit MODULE:FACTORY`: 1 means a hazard was found; a factory that
    cannot be imported is 2."""
    run = subprocess.run(
        [sys.executable, "-m", "shared.culprit", "no_such_project.models:build_model"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "error: cannot import 'no_such_project.models'" in run.stderr


def test_every_exit_code_is_documented():
    """The README's table of exit codes is ExitCode, code for code, name for name."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\| (\d+) \| `(\w+)` \| \S", readme, flags=re.MULTILINE)
    assert {(int(code), name) for code, name in documented} == {(c.value, c.name) for c in ExitCode}


def test_a_case_preloads_only_what_it_imports(tmp_path):
    """The parent imports what the chosen cases' files import (at any depth, and what a shared
    function they import imports when called) and torch, not every library: a synthetic case
    importing NumPy pays for no transformers, diffusers or peft."""
    from shared.harness.runner import library_imports

    write_case(tmp_path / "cases", "numpy_only", CASE_TOML, {"warns.py": WARNS})
    write_case(tmp_path / "cases", "lazy", CASE_TOML, {
        "broken.py": "def build():\n    import peft\n",
        "fixed.py": "from shared.tiny_models import quiet_hf_logging\nquiet_hf_logging()\n",
    })  # fmt: skip
    lazy = {module for module, _ in library_imports(tmp_path / "cases" / "lazy")}
    assert {"peft", "transformers", "shared.tiny_models"} <= lazy, lazy
    libraries = ("torch", "numpy", "transformers", "diffusers", "peft", "accelerate")
    code = (
        "import sys\nfrom pathlib import Path\nfrom shared.harness.runner import preload\n"
        f"preload([Path({str(tmp_path / 'cases' / 'numpy_only')!r})])\n"
        f"print(' '.join(name for name in {libraries!r} if name in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, check=True)  # fmt: skip
    assert run.stdout.split() == ["torch", "numpy"], run.stdout + run.stderr


def _strip(cases_dir: Path, case: str, script: str, old: str, new: str) -> None:
    """Copy a real case into ``cases_dir`` with ``old`` replaced by ``new`` in ``script``: a fix
    as a careless contributor might leave it (the copy is temporary, never a committed case)."""
    shutil.copytree(ROOT / "cases" / case, cases_dir / case)
    path = cases_dir / case / script
    source = path.read_text(encoding="utf-8")
    assert old in source, f"{case}/{script} no longer holds {old!r}: update this test"
    path.write_text(source.replace(old, new), encoding="utf-8")


# (case, broken, fixed, what the fix loses, replaced by, what the verdict says it dropped)
STRIPPED = [
    # Its float16 cast removed: everything runs float32, the merge never mismatches.
    ("index-put-embed-merge", "broken_fp16_upcast_norm", "fixed_fp16_upcast_norm",
     "model.to(torch.float16)\n", "", "`model` drops float16"),
    # Loaded without 4-bit quantization: no bitsandbytes layer is ever moved.
    ("bnb-quantized-to", "broken_device", "fixed_device",
     "model = load_4bit(checkpoint, device, torch.float32)",
     "from transformers import LlamaForCausalLM\n"
     "model = LlamaForCausalLM.from_pretrained(checkpoint).to(device)",
     "`model` drops quantized:Linear4bit"),
]  # fmt: skip


@pytest.fixture(scope="module")
def stripped_run(tmp_path_factory):
    """One run of every STRIPPED pair, each fix stripped: (process, report folder)."""
    cases_dir = tmp_path_factory.mktemp("stripped") / "cases"
    only = []
    for case, broken, fixed, old, new, _ in STRIPPED:
        _strip(cases_dir, case, f"{fixed}.py", old, new)
        only += ["--only", f"{case}/{broken}", "--only", f"{case}/{fixed}"]
    report_dir = cases_dir.parent / "reports"
    cases = [case for case, *_ in STRIPPED]
    return run_gallery(
        *cases, "--cases-dir", str(cases_dir), *only, report_dir=report_dir
    ), report_dir


@pytest.mark.parametrize(("case", "broken", "fixed", "old", "new", "dropped"), STRIPPED)
def test_a_fix_stripped_of_its_setting_fails(
    stripped_run, gallery, case, broken, fixed, old, new, dropped
):
    """A fixed variant that passes its checks without the setting its broken twin fails in (the
    half weights, the quantized layers) is FIX-FAILED, naming what it dropped; the same fix as
    committed passed in the gallery run, in its twin's setting."""
    run, report_dir = stripped_run
    stripped = read_report(report_dir, case)
    assert stripped[fixed]["kind"] == "FIX-FAILED", run.stdout[-3000:]
    assert f"ran another setting than {broken}" in stripped[fixed]["detail"]
    assert dropped in stripped[fixed]["detail"]
    assert run.returncode == 1
    committed = gallery.report(case)
    assert committed[fixed]["kind"] == "PASSED", gallery.evidence()
    assert committed[fixed]["setting"]["models"] == committed[broken]["setting"]["models"]
