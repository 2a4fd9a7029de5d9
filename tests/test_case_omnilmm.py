"""The omnilmm case through the harness: what reproduces, what passes, what is skipped, and why.

One gallery run per module. The CUDA-only variant is checked as SKIPPED (with its reason) on a
machine without a GPU and as REPRODUCED with the documented message on one with a GPU.
"""

from __future__ import annotations

import re

import pytest
from conftest import read_report, run_gallery

CASE = "omnilmm"
CONV_SPLIT = (
    r"Input type \(torch\.cuda\.{dtype}Tensor\) and weight type \(torch\.{dtype}Tensor\) "
    r"should be the same"
)
TOWER_LEFT_BEHIND = re.compile(
    r"(\d+) of (\d+) parameters the forward uses are not on (\w+) \(([^)]*)\)"
)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("report")
    completed = run_gallery(CASE, report_dir=out)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return read_report(out, CASE)


@pytest.fixture(scope="module")
def on_gpu(report) -> bool:
    """Whether the variants ran on CUDA (pick_device chooses it wherever there is one)."""
    return report["fixed"]["device"] == "cuda"


def test_every_variant_is_reported(report):
    assert set(report) == {
        "broken", "fixed", "broken_placement", "fixed_placement", "broken_dtype", "fixed_dtype",
    }  # fmt: skip


def test_broken_reproduces_on_cuda_and_is_skipped_visibly_without(report, on_gpu):
    broken = report["broken"]
    if on_gpu:
        assert broken["verdict"] == "REPRODUCED", broken["detail"]
        assert broken["error"]["type"] == "RuntimeError"
        assert re.search(CONV_SPLIT.format(dtype="Half"), broken["error"]["message"])
    else:
        assert broken["verdict"] == "SKIPPED"  # never counted as passed
        assert "needs CUDA" in broken["detail"]
        assert "no honest CPU stand-in" in broken["detail"]
        assert broken["error"] is None and broken["checks"] == []


def test_broken_placement_names_only_the_list_held_tower(report, on_gpu):
    broken = report["broken_placement"]
    assert broken["verdict"] == "REPRODUCED", broken["detail"]
    assert broken["error"]["type"] == "AssertionError"
    assert any("tiny_omnilmm.py:assert_placement" in frame for frame in broken["error"]["frames"])
    found = TOWER_LEFT_BEHIND.search(broken["error"]["message"])
    assert found, broken["error"]["message"]
    left_behind, total, target, holders = found.groups()
    assert target == ("cuda" if on_gpu else "meta")
    # Every straggler lives in the tower's list: nothing registered was left behind.
    assert holders == f"base_model.model.vision_tower[0]: {left_behind}"
    assert 0 < int(left_behind) < int(total)


def test_fixed_placement_leaves_nothing_behind(report, on_gpu):
    fixed = report["fixed_placement"]
    assert fixed["verdict"] == "PASSED", fixed["detail"]
    (check,) = fixed["checks"]
    target = "cuda" if on_gpu else "meta"
    assert re.fullmatch(rf"all \d+ parameters the forward uses are on {target}", check["detail"])


def test_broken_dtype_fails_with_a_real_dtype_error(report, on_gpu):
    broken = report["broken_dtype"]
    assert broken["verdict"] == "REPRODUCED", broken["detail"]
    assert broken["error"]["type"] == "RuntimeError"
    expected = (
        CONV_SPLIT.format(dtype="Float")
        if on_gpu
        else "mat1 and mat2 must have the same dtype, but got Float and Half"
    )
    assert re.search(expected, broken["error"]["message"])


@pytest.mark.parametrize("name", ["fixed", "fixed_dtype"])
def test_fixed_embedding_matches_float32_reference(report, name):
    fixed = report[name]
    assert fixed["verdict"] == "PASSED", fixed["detail"]
    (numeric,) = [check for check in fixed["checks"] if "max_abs_err" in check]
    assert numeric["dtype"] == "float16"
    assert 0 < numeric["max_abs_err"] < numeric["atol"]


def test_fixed_lora_training_runs_and_changes_only_lora(report):
    checks = {check["label"]: check for check in report["fixed"]["checks"]}
    assert re.fullmatch(r"all \d+ parameters the forward uses are on \w+",
                        checks["placement before training"]["detail"])  # fmt: skip
    first, last = map(float, checks["loss decreases"]["detail"].split(" -> "))
    assert last < first
    changed = re.match(
        r"(\d+) of (\d+) parameters changed \(list-held tower counted\), (\d+) of them LoRA; "
        r"LoRA weights: (\d+)",
        checks["only LoRA weights change"]["detail"],
    )
    assert changed, checks["only LoRA weights change"]["detail"]
    n_changed, n_total, n_lora_changed, n_lora = map(int, changed.groups())
    assert n_changed == n_lora_changed == n_lora > 0 and n_total > n_lora


def test_the_list_hides_the_tower_from_module_machinery():
    """The mechanism itself, in-process: what `.to()`, `parameters()` and save miss."""
    import torch

    from cases.omnilmm.tiny_omnilmm import (
        forward_parameters,
        load_tiny_omnilmm,
        save_tiny_checkpoint,
    )

    model = load_tiny_omnilmm(save_tiny_checkpoint(), dtype=torch.float32)
    tower_names = {f"vision_tower[0].{name}" for name, _ in model.vpm.named_parameters()}
    assert tower_names
    assert not any("vision_tower" in name for name in model.state_dict())
    assert {name for name, _ in forward_parameters(model)} - {
        name for name, _ in model.named_parameters()
    } == tower_names
    model.half()
    assert model.projector.weight.dtype == torch.float16
    assert model.vpm.dtype == torch.float32  # `.half()` never saw it


def test_culprit_of_the_dtype_pair_is_the_projector(report):
    culprit = report["broken_dtype"]["culprit"]
    assert culprit["module"] == "PeftModel.base_model.model.projector"
    assert (culprit["input_dtype"], culprit["parameter_dtype"]) == ("float32", "float16")
