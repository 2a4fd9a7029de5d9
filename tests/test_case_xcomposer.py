"""The xcomposer case through the harness: the fp16 projector raises, the three fixes are right."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, read_report, run_gallery

MESSAGE = "mat1 and mat2 must have the same dtype, but got Float and Half"
FLOAT16_FIXES = ("fixed", "fixed_cast_image")


@pytest.fixture(scope="module")
def xcomposer(tmp_path_factory):
    report_dir = tmp_path_factory.mktemp("report")
    run = run_gallery("xcomposer", report_dir=report_dir)
    assert run.returncode == 0, run.stdout + run.stderr
    return run, read_report(report_dir, "xcomposer")


def test_broken_raises_in_the_projectors_first_linear(xcomposer):
    _, report = xcomposer
    result = report["broken"]
    assert result["verdict"] == "REPRODUCED"
    assert result["error"]["type"] == "RuntimeError"
    assert result["error"]["message"] == MESSAGE
    frames = result["error"]["frames"]
    assert frames[-1].endswith("linear.py:forward")  # a Linear raised ...
    sequential = max(i for i, f in enumerate(frames) if f.endswith("container.py:forward"))
    img2emb = max(i for i, f in enumerate(frames) if f.endswith("tiny_xcomposer2.py:img2emb"))
    assert img2emb < sequential  # ... inside the projector's nn.Sequential, called by img2emb
    # The CLIP tower had returned: none of its frames is on the stack.
    assert not any("modeling_clip.py" in frame for frame in frames)


@pytest.mark.parametrize("variant", FLOAT16_FIXES)
def test_float16_fixes_match_the_float32_logits(xcomposer, variant):
    _, report = xcomposer
    result = report[variant]
    assert result["verdict"] == "PASSED"
    (check,) = result["checks"]
    assert check["label"] == "LLM logits"
    assert check["dtype"] == "float16"
    assert 0 < check["max_abs_err"] <= check["atol"] == 0.01


def test_float32_load_is_the_reference_computation(xcomposer):
    _, report = xcomposer
    result = report["fixed_fp32"]
    assert result["verdict"] == "PASSED"
    (check,) = result["checks"]
    assert check["dtype"] == "float32"
    assert check["max_abs_err"] <= check["atol"] == 1e-5


def test_deprecated_cuda_autocast_spelling_needs_cuda(xcomposer):
    _, report = xcomposer
    result = report["fixed_cuda_amp_autocast"]
    if torch.cuda.is_available():
        assert result["verdict"] == "PASSED"
        assert result["checks"][0]["dtype"] == "float16"
    else:
        assert result["verdict"] == "SKIPPED"
        assert result["detail"].startswith("needs CUDA, no CUDA device here")
        assert "torch.cuda.amp.autocast() disables itself" in result["detail"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the claim is about machines without CUDA")
def test_without_cuda_the_deprecated_spelling_disables_itself_and_fails_as_broken():
    script = ROOT / "cases" / "xcomposer" / "fixed_cuda_amp_autocast.py"
    run = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert run.returncode != 0
    assert "Disabling autocast" in run.stderr
    assert run.stderr.rstrip().endswith(f"RuntimeError: {MESSAGE}")


def test_output_names_device_and_verdicts(xcomposer):
    run, _ = xcomposer
    lines = run.stdout.splitlines()
    broken = next(line for line in lines if line.strip().startswith("REPRODUCED     broken "))
    assert " cpu " in broken or " cuda " in broken
    assert MESSAGE in broken
    skipped = 0 if torch.cuda.is_available() else 1
    summary = f"gallery: OK ({5 - skipped} as documented, 0 anomalies, {skipped} skipped)"
    assert summary in run.stdout
