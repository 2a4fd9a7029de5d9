"""The culprit finder: the audit marks the odd tensors, the guard names the first bad call."""

from __future__ import annotations

import contextlib
import json
import sys

import pytest
import torch
from conftest import ROOT
from torch import nn

from shared.culprit import (
    DtypeDeviceMismatch,
    MismatchGuard,
    NonFiniteGuard,
    as_record,
    audit,
    format_audit,
)

# The case's tiny model, imported as its scripts import it: by plain name from its folder.
sys.path.insert(0, str(ROOT / "cases" / "minicpm"))
from tiny_minicpmv import TinyMiniCPMV, example_batch, save_tiny_checkpoint  # noqa: E402

TORCH_ERROR = "mat1 and mat2 must have the same dtype"


def bf16_model_with_one_fp32_parameter() -> nn.Module:
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4)).to(torch.bfloat16)
    model[1].register_parameter("scale", nn.Parameter(torch.ones(4)))  # float32
    model[0].register_buffer("steps", torch.zeros(3, dtype=torch.int64))  # integer: not odd
    return model


def test_audit_marks_exactly_the_float32_parameter():
    rows = audit(bf16_model_with_one_fp32_parameter())
    (odd,) = [row for row in rows if row.odd]
    assert (odd.module, odd.kind, odd.dtype, odd.names) == ("1", "param", "float32", ("scale",))
    assert odd.note == "odd: float32 in a bfloat16 model"
    # Every direct tensor of every submodule is in exactly one row.
    assert sorted(name for row in rows for name in row.names) == [
        "bias", "bias", "scale", "steps", "weight", "weight"
    ]  # fmt: skip


def test_format_audit_points_at_the_odd_row_only():
    table = format_audit(bf16_model_with_one_fp32_parameter())
    (marked,) = [line for line in table.splitlines() if "<--" in line]
    assert marked.split()[:4] == ["1", "param", "cpu", "float32"]
    assert marked.endswith("scale  <-- odd: float32 in a bfloat16 model")
    assert "mostly bfloat16 on cpu" in table.splitlines()[0]
    assert table.splitlines()[-1] == "1 odd group of 4"


def test_format_audit_odd_only_lists_the_noted_rows():
    lines = format_audit(bf16_model_with_one_fp32_parameter(), odd_only=True).splitlines()
    assert [line.split()[0] for line in lines[2:-1]] == ["1"]


class ModelKeepingNormFp32(nn.Module):
    _keep_in_fp32_modules = ["norm"]

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)
        self.prenorm = nn.LayerNorm(8)  # "norm" is not a dotted part of "prenorm"


def test_audit_tells_keep_in_fp32_modules_from_accidents():
    model = ModelKeepingNormFp32().to(torch.bfloat16)
    model.norm.float()
    model.prenorm.float()
    rows = {row.module: row for row in audit(model)}
    assert not rows["norm"].odd
    assert rows["norm"].note == (
        "float32 in a bfloat16 model: kept float32 on purpose by _keep_in_fp32_modules"
    )
    assert rows["prenorm"].odd
    table = format_audit(model)
    assert "_keep_in_fp32_modules: norm" in table
    assert "kept float32 on purpose by _keep_in_fp32_modules" in table


def test_audit_marks_a_submodule_on_another_device():
    model = nn.Sequential(nn.Linear(64, 64), nn.Linear(2, 2, device="meta"))
    (odd,) = [row for row in audit(model) if row.odd]
    assert (odd.module, odd.device, odd.note) == ("1", "meta", "odd: on meta in a cpu model")


@pytest.fixture(scope="module")
def checkpoint():
    return save_tiny_checkpoint()


@pytest.fixture
def minicpm(checkpoint):
    """The broken case's model: loaded in bfloat16, its position table left float32."""
    return TinyMiniCPMV.from_pretrained(checkpoint, dtype=torch.bfloat16)


@pytest.mark.parametrize(
    "give_model, path",
    [(True, "TinyMiniCPMV.resampler.attn"), (False, "Resampler.attn")],
    ids=["named-from-the-model", "named-when-called"],
)
def test_guard_names_the_resampler_attention_first(minicpm, give_model, path):
    with MismatchGuard(minicpm if give_model else None) as guard:
        with pytest.raises(RuntimeError, match=TORCH_ERROR):  # record mode: torch still raises
            minicpm.get_vllm_embedding(example_batch(torch.device("cpu")))
    first = guard.first
    assert first.module == path
    assert (first.module_class, first.role) == ("MultiheadAttention", "query")
    assert (first.input_dtype, first.input_device) == ("float32", "cpu")
    assert (first.parameter, first.parameter_dtype) == ("in_proj_weight", "bfloat16")
    assert first.describe() == (
        f"{path} (MultiheadAttention): query Float on cpu vs in_proj_weight BFloat16 on cpu"
    )
    record = json.loads(json.dumps(as_record(first)))
    assert record["module"] == path and record["description"] == first.describe()


def test_guard_records_nothing_once_the_whole_model_is_bfloat16(minicpm):
    minicpm.to(torch.bfloat16)
    with MismatchGuard(minicpm) as guard:
        embedding = minicpm.get_vllm_embedding(example_batch(torch.device("cpu")))
    assert embedding.dtype == torch.bfloat16
    assert guard.mismatches == []


def test_guard_does_not_judge_under_autocast(minicpm):
    with MismatchGuard(minicpm) as guard, torch.autocast("cpu", dtype=torch.bfloat16):
        minicpm.get_vllm_embedding(example_batch(torch.device("cpu")))
    assert guard.mismatches == []


def test_raise_mode_stops_before_torchs_own_error(minicpm):
    batch = example_batch(torch.device("cpu"))
    with pytest.raises(DtypeDeviceMismatch) as raised:
        with MismatchGuard(minicpm, raise_on_mismatch=True):
            minicpm.get_vllm_embedding(batch)
    message = str(raised.value)
    assert message.startswith(
        "TinyMiniCPMV.resampler.attn (MultiheadAttention): query Float on cpu vs in_proj_weight "
        "BFloat16 on cpu. Cast the module or the input: "
        "module.to(torch.float32) / input.to(torch.bfloat16)"
    )
    assert raised.value.mismatch.role == "query"
    # Raised by the pre-hook: torch's attention never ran.
    assert "multi_head_attention_forward" not in [entry.name for entry in raised.traceback]
    with pytest.raises(RuntimeError, match=TORCH_ERROR):  # guard gone: torch's own error again
        minicpm.get_vllm_embedding(batch)


def test_guard_records_a_device_mismatch():
    layer = nn.Linear(3, 2, device="meta")
    with MismatchGuard() as guard, pytest.raises(RuntimeError):  # the forward then fails
        layer(torch.ones(3))
    (mismatch,) = guard.mismatches
    assert mismatch.describe() == "Linear (Linear): input Float on cpu vs weight Float on meta"
    with pytest.raises(DtypeDeviceMismatch, match=r"module\.to\('cpu'\) / input\.to\('meta'\)"):
        with MismatchGuard(layer, raise_on_mismatch=True):
            layer(torch.ones(3))


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(2, dtype=torch.bfloat16))

    def forward(self, x, extras=(), **options):
        return x * self.weight


def test_guard_names_keyword_and_nested_inputs():
    module, bf16, fp32 = Scaled(), torch.ones(2, dtype=torch.bfloat16), torch.ones(2)
    with MismatchGuard(module) as guard:
        module(bf16, extras=[bf16, fp32], scale=fp32, steps=torch.arange(2))
        module(bf16, {"mask": fp32})
    assert [m.role for m in guard.mismatches] == ["extras[1]", "scale", "extras['mask']"]


def test_guard_falls_back_to_input_numbers_when_the_call_does_not_bind():
    module = Scaled()
    with MismatchGuard() as guard, pytest.raises(TypeError):  # too many arguments
        module(torch.ones(2), (), torch.ones(2), torch.ones(2))
    assert [m.role for m in guard.mismatches] == ["input 0", "input 2", "input 3"]


def test_hooks_are_removed_when_the_guard_exits():
    layer = nn.Linear(2, 2).to(torch.bfloat16)
    with MismatchGuard() as guard:
        for _ in range(2):  # first call found by the global hook, the next by the layer's own
            with pytest.raises(RuntimeError, match=TORCH_ERROR):
                layer(torch.ones(2, 2))
    assert len(guard.mismatches) == 2
    with pytest.raises(RuntimeError, match=TORCH_ERROR):
        layer(torch.ones(2, 2))
    assert len(guard.mismatches) == 2


def test_guard_ignores_placeholder_weights_of_a_dispatched_module():
    """accelerate's offloaded layers hold "meta" placeholders until their hook loads them."""
    layer = nn.Linear(2, 2, device="meta")
    layer._hf_hook = object()  # what accelerate's add_hook_to_module sets
    with MismatchGuard(layer) as guard:
        with contextlib.suppress(Exception):
            layer(torch.ones(1, 2))
    assert guard.first is None


def test_non_finite_guard_names_the_first_gradient_that_went_bad_in_backward():
    """A forward that stays finite can still give NaN gradients (sqrt at 0): the forward watch
    finds nothing, the gradient watch names the parameter nearest the loss that got them."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 1))
    with torch.no_grad():
        model[1].weight.zero_()
        model[1].bias.zero_()
    with NonFiniteGuard(model, gradients=True) as values:
        model(torch.randn(2, 4)).abs().sqrt().sum().backward()
    assert values.first is None  # every output finite
    found = values.first_gradient
    # The last layer's (nearest the loss; weight and bias in autograd's order), not the first's.
    assert found is not None and found.parameter.startswith("Sequential.1."), found
    assert found.dtype == "float32" and 0 < found.nonfinite <= found.elements
    assert "first non-finite gradient" in found.describe()
    # Off by default, and gone afterwards: the same backward outside the guard records nothing.
    with NonFiniteGuard(model) as quiet:
        model(torch.randn(2, 4)).abs().sqrt().sum().backward()
    assert quiet.first_gradient is None and values.first_gradient == found


def test_a_setting_counts_a_quantized_weight_by_its_layer_not_its_storage_dtype():
    """bitsandbytes types a 4-bit weight's packed bytes with quant_storage (bfloat16 on CUDA in
    qlora-merge-4bit, uint8 on the CPU): the setting names the layer, not a bfloat16 model, so a
    fix's setting compares the same on both devices."""
    from shared.record import setting_of

    packed = type("Params4bit", (nn.Parameter,), {"__module__": "bitsandbytes.nn.modules"})
    layer = type("Linear4bit", (nn.Linear,), {"__module__": "bitsandbytes.nn.modules"})(4, 4)
    layer.weight = packed(torch.zeros(8, 1, dtype=torch.bfloat16), requires_grad=False)
    model = nn.Sequential(layer, nn.LayerNorm(4))
    assert setting_of({"model": model}) == {
        "models": {"model": ["float32", "quantized:Linear4bit"]},
        "autocast": [],
    }
    model[1].to(torch.bfloat16)  # a real bfloat16 parameter still counts
    assert setting_of({"model": model})["models"]["model"] == [
        "bfloat16",
        "float32",
        "quantized:Linear4bit",
    ]


class _ScaledInPlace(nn.Module):
    """A block that scales its child's output in place: the same tensor object, now inf."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(4, 4).to(torch.float16)

    def forward(self, x):
        return self.inner(x).mul_(1e6)


def test_the_producer_is_named_past_the_modules_whose_output_goes_unjudged():
    """Outputs that cannot be the first inf (torch's bounded activations, an eval Dropout's
    hand-on, a container returning an output already judged and unchanged) go unjudged; an
    output changed in place since it was judged is judged again."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.SiLU(), _ScaledInPlace(), nn.Dropout(0.1), nn.GELU()).eval()
    with NonFiniteGuard(model) as values:
        model(torch.full((2, 4), 0.5, dtype=torch.float16))
    assert values.first is not None and values.first.module == "Sequential.1", values.first
    # The same chain made finite: nothing reported.
    model[1].forward = lambda x: model[1].inner(x)
    with NonFiniteGuard(model) as quiet:
        model(torch.full((2, 4), 0.5, dtype=torch.float16))
    assert quiet.first is None


def test_module_paths_are_read_past_a_module_whose_init_never_ran():
    """A module made but never initialised (a deep copy that raised half-way leaves one, without
    `_modules`) is skipped when every live module's parent is read."""
    from shared.culprit.tensors import full_path, live_parents

    half_made = nn.Linear.__new__(nn.Linear)
    model = nn.Sequential(nn.Sequential(nn.Linear(2, 2)))
    assert full_path(model[0][0], live_parents()) == "Sequential.0.0"
    assert half_made not in live_parents()
