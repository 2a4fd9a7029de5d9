"""`explain`: from an error message, a traceback or a symptom phrase to the documented case.

The tiers on small texts here; tests/explain_texts/ holds real texts (upstream tracebacks,
held-out wordings, near misses) checked in test_explain_texts.py.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

from shared.harness.catalog import case_names, load_case
from shared.harness.explain import explain, literal, parse, shape

CASES = [load_case(name) for name in case_names()]
MINICPM_TRACEBACK = """Traceback (most recent call last):
  File "/home/u/MiniCPM-V/finetune/finetune.py", line 301, in <module>
    train()
  File "/home/u/.local/lib/python3.10/site-packages/transformers/trainer.py", line 1537, in train
    return inner_training_loop(
  File "/home/u/.cache/huggingface/modules/transformers_modules/resampler.py", line 150, in forward
    out = self.attn(
  File "/home/u/.local/lib/python3.10/site-packages/torch/nn/functional.py", line 5373, in multi_head_attention_forward
    q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
  File "/home/u/.local/lib/python3.10/site-packages/torch/nn/functional.py", line 4864, in _in_projection_packed
    return linear(q, w, b)
RuntimeError: mat1 and mat2 must have the same dtype, but got Float and BFloat16
"""  # noqa: E501


def cases_for(text: str) -> list[str]:
    return [match.case for match in explain(text, CASES)]


def run_explain(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shared.harness", "explain", *args],
                          cwd=ROOT, capture_output=True, text=True, input=stdin)  # fmt: skip


def test_a_traceback_is_read_for_its_last_error_and_its_library_frames():
    query = parse(MINICPM_TRACEBACK)
    assert query.error == "RuntimeError"
    assert query.message == "mat1 and mat2 must have the same dtype, but got Float and BFloat16"
    assert "torch/nn/functional.py:multi_head_attention_forward" in query.frames


def test_the_raise_site_ranks_the_case_whose_frame_it_is_first():
    assert cases_for(MINICPM_TRACEBACK)[0] == "minicpm"


def test_another_dtype_pair_of_the_same_message_matches_by_shape():
    text = "RuntimeError: Input type (c10::BFloat16) and bias type (c10::Half) should be the same"
    found = explain(text, CASES)
    assert found and found[0].how.startswith("same message, other dtypes")


def test_a_symptom_phrase_finds_its_case():
    assert cases_for("my SDXL pipeline gives a black image")[0] == "sdxl-vae-fp16"
    assert cases_for("unscale FP16 gradients")[0] == "lora-fp16-gradscaler"


@pytest.mark.parametrize("text", [
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB",
    "ValueError: too many values to unpack (expected 2)",
    "half",
])  # fmt: skip
def test_a_near_miss_matches_nothing_and_exits_1_naming_the_closest(text):
    assert cases_for(text) == []
    run = run_explain(text)
    assert run.returncode == 1 and run.stdout.startswith("no documented case; closest:")


def test_the_command_line_answers_with_cause_fix_versions_and_command():
    run = run_explain("--file", "-", stdin=MINICPM_TRACEBACK)
    assert run.returncode == 0, run.stderr
    first = run.stdout.split("\n\n")[0]
    for needle in ("minicpm:", "cause:", "fix: fixed: model.to(", "versions:",
                   "run it: nox -s case-minicpm"):  # fmt: skip
        assert needle in first, first


@pytest.mark.parametrize("args", [[], [""], ["--file", "/nonexistent/tb.txt"]])
def test_bad_input_exits_2(args):
    run = run_explain(*args)
    assert run.returncode == 2 and run.stderr.startswith("explain: error:")


def test_documented_patterns_read_as_the_text_they_match():
    assert literal(r"^Input type \((struct )?c10::Half\) and bias type \(float\)$") == (
        "Input type (c10::Half) and bias type (float)")  # fmt: skip
    assert shape("got Float and BFloat16 on cuda:0") == shape("got Half and float on cpu")


def test_cases_documenting_the_same_message_are_said_to_be_tied():
    run = run_explain("mat1 and mat2 must have the same dtype, but got Float and BFloat16")
    assert run.returncode == 0
    assert run.stdout.startswith("2 cases match equally well (minicpm, transformers-v5-dtype)")


def test_naming_the_application_project_breaks_the_tie():
    text = f"{MINICPM_TRACEBACK.splitlines()[-1]}\n(fine-tuning MiniCPM-V-2)"
    assert cases_for(text)[0] == "minicpm"
