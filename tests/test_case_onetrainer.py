"""The onetrainer case through the harness: each documented float16 failure reproduces with
its documented text, and each fix passes with its float16 outputs close to float32."""

from __future__ import annotations

import re

import pytest
from conftest import read_report, run_gallery


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    run = run_gallery("onetrainer", report_dir=out)
    assert run.returncode == 0, run.stdout + run.stderr
    return read_report(out, "onetrainer")


def assert_reproduced(variant: dict, error_type: str, pattern: str, raised_in: str) -> None:
    assert variant["verdict"] == "REPRODUCED", variant["detail"]
    assert variant["error"]["type"] == error_type
    assert re.search(pattern, variant["error"]["message"]), variant["error"]["message"]
    assert any(re.search(raised_in, frame) for frame in variant["error"]["frames"])


def numeric_checks(variant: dict) -> dict[str, dict]:
    return {c["label"]: c for c in variant["checks"] if "max_abs_err" in c}


def test_every_variant_ran(report):
    assert set(report) == {
        "broken",
        "broken_guarded",
        "fixed",
        "broken_sampling",
        "fixed_sampling",
        "broken_decode",
        "fixed_decode",
    }


def test_training_step_fails_in_the_time_embedding(report):
    assert_reproduced(
        report["broken"],
        "RuntimeError",
        r"^mat1 and mat2 must have the same dtype, but got Float and Half$",
        r"diffusers.models.embeddings\.py:forward$",
    )


def test_boundary_check_names_the_float32_mask(report):
    assert_reproduced(
        report["broken_guarded"],
        "TypeError",
        r"latent_mask is torch\.float32$",
        r"tiny_inpainting\.py:check_model_inputs$",
    )
    assert "noisy_latent" not in report["broken_guarded"]["error"]["message"]


def test_fixed_training_step_trains_in_float16(report):
    fixed = report["fixed"]
    assert fixed["verdict"] == "PASSED", fixed["detail"]
    details = {c["label"]: c["detail"] for c in fixed["checks"] if "detail" in c}
    assert details["UNet gradients"].endswith("float16 and finite")
    prediction = numeric_checks(fixed)["UNet noise prediction"]
    assert prediction["dtype"] == "float16"
    assert prediction["max_abs_err"] < prediction["atol"]
    assert prediction["max_abs_err"] < 1e-2  # the dossier measured about 2e-3


def test_sampling_fails_in_the_erode_kernel(report):
    broken = report["broken_sampling"]
    cuda_text = (
        r"Input type \(torch\.cuda\.HalfTensor\) and weight type \(torch\.cuda\.FloatTensor\)"
    )
    cpu_text = r"^expected scalar type Half but found Float$"
    pattern = cuda_text if broken["device"] == "cuda" else cpu_text
    assert_reproduced(broken, "RuntimeError", pattern, r"conv\.py:_conv_forward$")


def test_fixed_sampling_matches_float32(report):
    fixed = report["fixed_sampling"]
    assert fixed["verdict"] == "PASSED", fixed["detail"]
    images = numeric_checks(fixed)["sampled images"]
    assert images["dtype"] == "float16"
    assert images["max_abs_err"] < images["atol"]
    relative = next(c for c in fixed["checks"] if c["label"] == "sample relative L2 error")
    assert float(relative["detail"].split()[0]) < 2e-2


def test_decode_fails_in_post_quant_conv(report):
    assert_reproduced(
        report["broken_decode"],
        "RuntimeError",
        r"^Input type \(float\) and bias type \((struct )?c10::Half\) should be the same$",
        r"autoencoder_kl\.py:_decode$",
    )


def test_fixed_decode_matches_float32(report):
    fixed = report["fixed_decode"]
    assert fixed["verdict"] == "PASSED", fixed["detail"]
    images = numeric_checks(fixed)["debug images"]
    assert images["dtype"] == "float16"
    assert images["max_abs_err"] < images["atol"]


@pytest.mark.parametrize(
    ("variant", "module", "input_dtype", "weight_dtype"),
    [
        ("broken", "UNet2DConditionModel.time_embedding.linear_1", "float32", "float16"),
        ("broken_sampling", "Conv2d", "float16", "float32"),  # the sampler's own erode kernel
        ("broken_decode", "AutoencoderKL.post_quant_conv", "float32", "float16"),
    ],
)
def test_culprit_names_where_the_mismatch_starts(
    report, variant, module, input_dtype, weight_dtype
):
    culprit = report[variant]["culprit"]
    assert culprit["module"] == module
    assert (culprit["input_dtype"], culprit["parameter_dtype"]) == (input_dtype, weight_dtype)
    assert culprit["parameter"] == "weight"
