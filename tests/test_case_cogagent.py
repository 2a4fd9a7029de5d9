"""The cogagent case through the harness: every rank fails without a flag, --fp16/--bf16 fix it."""

import re

import pytest
from conftest import read_report, run_gallery

MESSAGE = "Input type (c10::Half) and bias type (float) should be the same"
TORCHRUN_VARIANTS = ("broken", "fixed", "fixed_bf16")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    run = run_gallery("cogagent", report_dir=out)
    assert run.returncode == 0, run.stdout + run.stderr
    return read_report(out, "cogagent")


@pytest.mark.parametrize("name", ["broken", "broken_single_process"])
def test_missing_flag_reproduces_the_half_image_error(report, name):
    variant = report[name]
    assert variant["verdict"] == "REPRODUCED", variant["detail"]
    assert variant["error"]["type"] == "RuntimeError"
    assert re.sub(r"struct ", "", variant["error"]["message"]) == MESSAGE
    # Raised by the BEiT encoder's patch-embedding convolution, not anywhere else.
    frames = variant["error"]["frames"]
    assert any("modeling_beit.py:forward" in frame for frame in frames)
    assert frames[-1].endswith(":_conv_forward")


@pytest.mark.parametrize("name", TORCHRUN_VARIANTS)
def test_torchrun_variants_agree_on_both_ranks(report, name):
    assert report[name]["detail"].startswith("all 2 ranks: "), report[name]["detail"]


@pytest.mark.parametrize(
    ("name", "dtype"),
    [("fixed", "float16"), ("fixed_bf16", "bfloat16"), ("fixed_single_process", "float16")],
)
def test_precision_flag_gives_answer_close_to_float32(report, name, dtype):
    variant = report[name]
    if variant["verdict"] == "SKIPPED":  # torch < 2.3: no float16 LayerNorm on the CPU
        assert "torch" in variant["detail"]
        return
    assert variant["verdict"] == "PASSED", variant["detail"]
    (check,) = variant["checks"]
    assert check["label"] == "answer logits"
    assert check["dtype"] == dtype
    assert 0 < check["max_abs_err"] < check["atol"]


@pytest.mark.parametrize("variant", ["broken", "broken_single_process"])
def test_culprit_is_the_beit_embeddings(report, variant):
    culprit = report[variant]["culprit"]
    assert culprit["module"] == "TinyCogAgent.cross_vision.embeddings"
    assert (culprit["role"], culprit["input_dtype"]) == ("pixel_values", "float16")
    assert culprit["parameter_dtype"] == "float32"


def test_the_real_torchrun_command_line_reproduces_too(tmp_path):
    """GALLERY_START=spawn launches `python -m torch.distributed.run` itself (fresh rank
    processes; torchrun ends in ChildFailedError): each rank's own result carries the error."""
    run = run_gallery(
        "cogagent", "--only", "broken", report_dir=tmp_path, env={"GALLERY_START": "spawn"}
    )
    assert run.returncode == 0, run.stdout + run.stderr
    broken = read_report(tmp_path, "cogagent")["broken"]
    assert broken["verdict"] == "REPRODUCED"
    assert broken["detail"].startswith(f"all 2 ranks: RuntimeError: {MESSAGE}")
