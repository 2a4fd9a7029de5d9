"""The model audit on your own model: `python -m shared.culprit MODULE:FACTORY`."""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import ROOT
from torch import nn
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode

from shared.culprit import (
    FlatParamWatch,
    MismatchGuard,
    NonFiniteGuard,
    OpWatch,
    ProfileWatches,
    TrainingArgsWatch,
    UnscaleWatch,
    generator_hazards,
    hazards,
    optimizer_hazards,
    pipeline_hazards,
    seen_hazards,
)
from shared.hazards import FINDERS, HAZARDS

FACTORIES = """
import torch
from torch import nn


class ListHeldTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.projector = nn.Linear(4, 4)
        self.vision_tower = [nn.Conv2d(3, 4, 2)]  # a plain list: .to() never reaches it


def hazardous():
    return ListHeldTower().to(torch.float16)


def clean():
    return nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 2)).to(torch.bfloat16)


def not_a_model():
    return 42
"""


def audit(tmp_path, factory: str) -> subprocess.CompletedProcess:
    (tmp_path / "my_models.py").write_text(FACTORIES, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "shared.culprit", f"my_models:{factory}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
    )  # fmt: skip


def test_a_hazard_in_your_model_is_named_with_the_case_that_shows_it(tmp_path):
    run = audit(tmp_path, "hazardous")
    assert run.returncode == 1, run.stderr
    assert "unreachable-submodule at vision_tower: list of modules, not a ModuleList" in run.stdout
    assert "float32 on cpu in a float16 model on cpu" in run.stdout
    assert "(see cases/omnilmm)" in run.stdout


def test_a_clean_model_says_so_and_exits_0(tmp_path):
    run = audit(tmp_path, "clean")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "none of the gallery's hazard patterns found" in run.stdout


def test_a_factory_that_returns_no_model_is_a_usage_error(tmp_path):
    run = audit(tmp_path, "not_a_model")
    assert run.returncode == 2 and "returned a int, not an nn.Module" in run.stderr


def test_every_hazard_names_a_case_and_what_finds_it():
    cases = {path.name for path in (ROOT / "cases").iterdir()}
    assert {kind.case for kind in HAZARDS.values()} <= cases
    assert {finder for kind in HAZARDS.values() for finder in kind.found_by} <= set(FINDERS)


def test_every_watcher_of_the_registry_is_a_watcher_of_shared_culprit():
    """The executor builds watchers by the names shared.hazards.FINDERS gives: each one is a
    context manager that, on a run that does nothing, sees nothing (its ``.found``)."""
    import shared.culprit

    watchers = {name: finder.watcher for name, finder in FINDERS.items() if finder.watcher}
    assert {"calls", "values", "ops", "fsdp", "scaler", "training-args"} <= set(watchers)
    for watcher in watchers.values():
        with getattr(shared.culprit, watcher)() as watching:
            pass
        assert watching.found == [] and seen_hazards(watching) == [], watcher


def test_every_hazard_of_a_held_subject_has_its_one_finder():
    """The registry dispatches: each (hazard kind, subject it is found in) of HAZARDS whose
    subject is held at the end has exactly one registered finder, and no finder is registered
    for a pair HAZARDS does not name; a subject watched while it runs names its watcher."""
    from shared.culprit.finders import REGISTRY, finder

    registered = [(kind, subject) for subject, finders in REGISTRY.items() for kind, _ in finders]
    named = [(kind, subject) for kind, hazard in HAZARDS.items() for subject in hazard.found_by
             if not FINDERS[subject].watcher]  # fmt: skip
    assert sorted(registered) == sorted(named)
    with pytest.raises(ValueError, match="not an end-state subject"):
        finder("half-fft", "ops")  # a watcher's hazard: no end-state finder
    assert all(hazard.fix for hazard in HAZARDS.values())


def test_profile_watches_leave_a_profiler_already_set_alone():
    """One profile function for every profile watcher of the registry; a profiler set before
    (cProfile, a coverage tool) is neither replaced nor unset, and the watchers say so."""

    def profiler(frame, event, arg):
        return None

    sys.setprofile(profiler)
    try:
        with ProfileWatches.of_registry() as displaced:
            assert sys.getprofile() is profiler
        assert displaced.displaced and sys.getprofile() is profiler
    finally:
        sys.setprofile(None)
    with ProfileWatches.of_registry() as watching:
        assert {type(w).__name__ for w in watching.watchers} == {
            "FlatParamWatch", "UnscaleWatch", "TrainingArgsWatch"}  # fmt: skip
        assert sys.getprofile() == watching._on_event
        if hasattr(torch.amp, "GradScaler"):  # torch >= 2.3: GradScaler('cpu')
            model = nn.Linear(4, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler = torch.amp.GradScaler("cpu")
            scaler.scale(model(torch.ones(2, 4)).sum()).backward()
            scaler.unscale_(optimizer)
            with pytest.raises(RuntimeError, match="already been"):
                scaler.unscale_(optimizer)
    assert not watching.displaced and sys.getprofile() is None
    if hasattr(torch.amp, "GradScaler"):
        assert [h.kind for h in watching.found] == ["unscale-twice"]


def test_a_tower_moved_by_hand_to_match_is_not_left_behind():
    model = _list_held_tower().to(torch.float16)
    assert [h.kind for h in hazards(model)] == ["unreachable-submodule", "half-on-cpu"]
    model.vision_tower[0].to(torch.float16)  # OmniLMM's fix: move the hidden tower too
    assert [h.kind for h in hazards(model)] == ["half-on-cpu"]


def _list_held_tower() -> nn.Module:
    namespace: dict = {}
    exec(FACTORIES, namespace)  # noqa: S102 - the test's own model source, shared with the CLI test
    return namespace["ListHeldTower"]()


@pytest.mark.parametrize(
    ("mask", "flagged"),
    [
        (torch.tensor([[1.0, 1.0, 0.0]]), True),  # keep/drop as 1/0: added, not applied
        (torch.tensor([[0.0, 0.0, float("-inf")]]), False),  # an additive mask
        (torch.tensor([[True, True, False]]), False),  # a bool mask is applied
        (torch.ones(1, 3), False),  # a constant offset: softmax does not see it
    ],
)
def test_only_a_float_mask_of_zeros_and_ones_is_a_hazard(mask, flagged):
    model = nn.Linear(4, 4)
    assert any(h.kind == "float-attention-mask" for h in hazards(model, mask)) == flagged
    query = torch.randn(1, 1, 3, 8)
    with OpWatch() as ops:
        F.scaled_dot_product_attention(query, query, query, attn_mask=mask)
    assert [h.kind for h in ops.found] == (["float-attention-mask"] if flagged else [])


def test_op_watch_steps_off_the_mode_stack_only_where_it_is_the_innermost_mode():
    class Other(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with OpWatch() as ops:
        with Other():
            assert not ops.pause()  # another mode above it: both stay where they are
        assert ops.pause()
        with contextlib.suppress(RuntimeError):  # not watched while off the stack
            torch.fft.fftn(torch.randn(8, 8, dtype=torch.bfloat16))
        assert ops.found == []
        ops.resume()
        with contextlib.suppress(RuntimeError):
            torch.fft.fftn(torch.randn(8, 8, dtype=torch.bfloat16))
        assert [h.kind for h in ops.found] == ["half-fft"]
        assert ops.pause()  # left at exit while off the stack: nothing else is popped
    with Other() as outer:
        with OpWatch() as ops:
            ops.pause()
        assert torch.overrides._get_current_function_mode() is outer


class MaskedAttention(nn.Module):
    def forward(self, x, mask=None):
        return F.scaled_dot_product_attention(x, x, x, attn_mask=mask)


def test_a_model_past_its_first_calls_is_watched_again_when_given_a_new_kind_of_input():
    from shared.culprit.diagnose import FULLY_WATCHED_CALLS, Diagnosis

    model, x = MaskedAttention(), torch.randn(1, 1, 3, 8)
    zeros_and_ones = torch.tensor([[1.0, 1.0, 0.0]])
    found = {}
    for every_call in (False, True):
        with Diagnosis(every_call=every_call) as diagnosis:
            for _ in range(FULLY_WATCHED_CALLS + 1):
                model(x, mask=torch.ones(1, 3))  # a constant float mask: no hazard
            model(x, mask=zeros_and_ones)  # the same kind of input: its torch calls unwatched
            seen_alike = [h.kind for h in diagnosis.ops.found]
            model(x[:, :, :2], mask=zeros_and_ones[:, 1:])  # a new shape: watched again
            found[every_call] = (seen_alike, [h.kind for h in diagnosis.ops.found])
    assert found[False] == ([], ["float-attention-mask"])
    assert found[True] == (["float-attention-mask"], ["float-attention-mask"])


@pytest.fixture
def global_hook_options(request, monkeypatch):
    """The diagnosis's global forward hook as this torch takes it, as torch 2.1 to 2.5 do (no
    keyword arguments: always_call alone) and as torch 2.0 does (neither: not called after an
    exception)."""
    from shared.culprit import guards

    older = {"torch 2.5": {"always_call"}, "torch 2.0": set()}.get(request.param)
    if older is not None:
        monkeypatch.setattr(guards, "GLOBAL_FORWARD_HOOK_OPTIONS", frozenset(older))
    return request.param


@pytest.mark.parametrize("global_hook_options", ["this torch", "torch 2.5", "torch 2.0"],
                         indirect=True)
def test_a_call_by_keyword_is_watched_whatever_torch_hands_its_global_hook(
        global_hook_options, recwarn):  # fmt: skip
    """A model called by keyword that overflows: its producer named, its input known as given,
    the call counted out, on a torch whose global forward hook gets no keyword arguments too."""
    from shared.culprit.diagnose import Diagnosis

    model = nn.ModuleDict({"proj": nn.Linear(4, 4, bias=False)}).to(torch.float16)
    nn.init.constant_(model["proj"].weight, 100.0)
    model.forward = lambda features: model["proj"](features)
    given = torch.full((2, 4), 1000.0, dtype=torch.float16)  # 4e5 a sum: past float16's range
    with Diagnosis() as diagnosis:
        assert torch.isinf(model(features=given)).all()
        assert diagnosis._calls.depth == 0 and given in diagnosis._given
        assert diagnosis._calls.values.first.module == "ModuleDict.proj"
    assert not [w for w in recwarn if "hook" in str(w.message)]  # no check of ours raised


@pytest.mark.parametrize("global_hook_options", ["this torch", "torch 2.5"], indirect=True)
def test_a_call_that_raises_in_its_first_module_is_counted_out_with_what_it_was_given(
        global_hook_options, recwarn):  # fmt: skip
    """Torch hands a global forward hook no keyword arguments after an exception: the input given
    by keyword is still known as given, and the next call is an outermost one again."""
    from shared.culprit.diagnose import Diagnosis

    model, given = nn.Sequential(nn.Linear(4, 4)).to(torch.bfloat16), torch.randn(2, 4)
    kwargs_model = nn.ModuleDict({"proj": nn.Linear(4, 4)}).to(torch.bfloat16)
    kwargs_model.forward = lambda features: kwargs_model["proj"](features)
    with Diagnosis() as diagnosis:
        for call in (lambda: model(given), lambda: kwargs_model(features=given)):
            with pytest.raises(RuntimeError, match="dtype"):
                call()
            assert diagnosis._calls.depth == 0
            assert given in diagnosis._given
    assert not [w for w in recwarn if "hook" in str(w.message)]  # no check of ours raised


def test_a_model_copied_or_pickled_under_the_diagnosis_takes_no_watch_along():
    """A float32 reference made with copy.deepcopy (Wav2Vec2's weight-normed conv: its weight a
    non-leaf tensor after a forward with gradients) and torch.save of a whole model: the copy
    holds inert hooks, never the watch's state (which holds the run's tensors and cannot be
    copied), and is watched with hooks of its own from its first call."""
    import copy
    import pickle

    from shared.culprit.diagnose import Diagnosis
    from shared.culprit.guards import OwnHook

    conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 4, 3, padding=1))
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
    with Diagnosis() as diagnosis:
        conv(torch.randn(1, 4, 8)).sum().backward()
        model(torch.randn(2, 8))
        reference = copy.deepcopy(conv).double()
        loaded = pickle.loads(pickle.dumps(model))
        for copied in (reference, loaded[0]):
            assert not any(isinstance(h, OwnHook) for h in copied._forward_pre_hooks.values())
        reference(torch.randn(1, 4, 8, dtype=torch.float64))
        assert reference in diagnosis._calls._names


@pytest.mark.parametrize("global_hook_options", ["torch 2.0"], indirect=True)
def test_after_a_raised_call_torch_never_left_the_next_call_is_outermost(global_hook_options):
    """Torch 2.0 calls no global forward hook after an exception: the calls in progress are
    counted from the stack, so the script's next model call is an outermost one again."""
    from shared.culprit.diagnose import Diagnosis

    failing = nn.Sequential(nn.Linear(4, 4)).to(torch.bfloat16)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    with Diagnosis() as diagnosis:
        with pytest.raises(RuntimeError, match="dtype"):
            failing(torch.randn(2, 4))
        model(torch.randn(2, 4))
        assert diagnosis._calls_of.get(model) == 1 and model in diagnosis._roots


def test_op_watch_records_a_half_fft_and_not_a_float32_one():
    with OpWatch() as ops:
        torch.fft.fftn(torch.randn(8, 8))
        assert ops.found == []
        with contextlib.suppress(RuntimeError):  # CPU torch refuses a bfloat16 FFT
            torch.fft.fftn(torch.randn(8, 8, dtype=torch.bfloat16))
    assert [(h.kind, h.where) for h in ops.found] == [("half-fft", "torch.fft.fftn")]


def test_op_watch_records_a_bfloat16_tensor_handed_to_numpy_and_not_a_float16_one():
    for to_numpy, where in ((torch.Tensor.numpy, "Tensor.numpy"), (np.asarray, "Tensor.__array__")):
        with OpWatch() as ops:
            to_numpy(torch.ones(2, dtype=torch.float16))
            to_numpy(torch.ones(2))
            assert ops.found == []
            with contextlib.suppress(TypeError):  # NumPy has no bfloat16: torch refuses it
                to_numpy(torch.ones(2, 3, dtype=torch.bfloat16))
        assert [(h.kind, h.where) for h in ops.found] == [("bfloat16-to-numpy", where)]
        assert ops.found[0].detail == "a bfloat16 tensor of shape (2, 3)"


def test_op_watch_records_a_draw_from_a_generator_on_another_device_type():
    """On CUDA torch refuses such a draw; meta accepts it, so the rule is checked here."""
    randn_tensor = pytest.importorskip("diffusers.utils.torch_utils").randn_tensor
    generator = torch.Generator().manual_seed(0)
    with OpWatch() as ops:
        torch.randn(2, generator=generator)
        torch.empty(2).normal_(generator=generator)
        randn_tensor((2,), generator=generator, device=torch.device("meta"))  # CPU, then moved
        assert ops.found == []
        torch.randn(2, generator=generator, device="meta")
    assert [(h.kind, h.where) for h in ops.found] == [("generator-device", "randn")]
    assert ops.found[0].detail == "a cpu generator drawing a meta tensor"


class _Scores(nn.Module):
    """Fills the masked scores with ``value``, as an attention module fills its padding keys."""

    def __init__(self, value: float):
        super().__init__()
        self.value = value

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return scores.masked_fill(torch.tensor([False, True]), self.value)


def test_op_watch_records_a_fill_past_a_half_dtypes_range_and_names_the_module():
    model = nn.Sequential(_Scores(torch.finfo(torch.float32).min))
    with OpWatch() as ops:
        model[0].value = float("-inf")  # infinity is allowed, as is each dtype's own minimum
        model(torch.zeros(2, dtype=torch.float16))
        torch.full((2,), torch.finfo(torch.bfloat16).min, dtype=torch.bfloat16)
        torch.full((2,), -1e9)  # float32 holds it
        assert ops.found == []
        model[0].value = -1e9
        with pytest.raises(RuntimeError, match="Half without overflow"):  # the watch passes it on
            model(torch.zeros(2, dtype=torch.float16))
    assert [(h.kind, h.where) for h in ops.found] == [("fill-out-of-range", "Sequential.0")]
    detail = "Tensor.masked_fill: -1e+09 into a float16 tensor (its range ends at +-65504)"
    assert ops.found[0].detail == detail


def test_a_cpu_generator_may_seed_a_pipeline_anywhere():
    """randn_tensor draws on a CPU generator and moves the latents; a CUDA generator for a
    CPU pipeline (generator-device's broken) needs a GPU to exist: that case checks it."""
    cpu = {"generator": torch.Generator()}
    assert generator_hazards(cpu, "cpu") == generator_hazards(cpu, "meta") == []


@pytest.fixture
def one_gloo_rank(monkeypatch):
    """shared.distributed's one-rank process group, its launcher variables undone after."""
    from shared.distributed import one_gloo_rank

    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.setenv(name, "")
    return one_gloo_rank


def test_flat_param_watch_names_the_fsdp1_unit_that_mixes_dtypes(one_gloo_rank):
    fsdp = pytest.importorskip("torch.distributed.fsdp")
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    def mixed():
        return nn.Sequential(nn.Linear(4, 4).bfloat16(), nn.Linear(4, 4))

    with one_gloo_rank() as cpu:
        wrap = functools.partial(fsdp.FullyShardedDataParallel, use_orig_params=True, device_id=cpu)
        with FlatParamWatch() as each_its_own:  # each Linear its own unit: one dtype each
            wrap(mixed(), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
        with FlatParamWatch() as one_unit, contextlib.suppress(ValueError):
            wrap(mixed())  # one unit: FSDP1 refuses it
    assert each_its_own.found == []
    assert [(h.kind, h.where, h.detail) for h in one_unit.found] == [
        ("mixed-flat-param", "Sequential", "2 bfloat16 and 2 float32 parameters")
    ]
    assert sys.getprofile() is None  # the watch is gone with its context


def test_unscale_watch_names_the_second_unscale_before_update():
    """The gradient-accumulation loop of gradscaler-unscale-twice: unscale_ on each micro-step
    is seen (and torch raises); once per step, with update() between, is not."""
    if not hasattr(torch.amp, "GradScaler"):
        pytest.skip("torch.amp.GradScaler('cpu') needs torch >= 2.3")
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def micro_step(scaler, unscale: bool) -> None:
        scaler.scale(model(torch.ones(2, 4)).sum()).backward()
        if unscale:
            scaler.unscale_(optimizer)

    with UnscaleWatch() as once_per_step:
        scaler = torch.amp.GradScaler("cpu")
        for step in range(4):
            micro_step(scaler, unscale=step % 2 == 1)
            if step % 2 == 1:
                scaler.step(optimizer)
                scaler.update()
    with UnscaleWatch() as every_micro_step, pytest.raises(RuntimeError, match="already been"):
        scaler = torch.amp.GradScaler("cpu")
        micro_step(scaler, unscale=True)
        micro_step(scaler, unscale=True)
    assert once_per_step.found == []
    assert [(h.kind, h.where) for h in every_micro_step.found] == [
        ("unscale-twice", "test_audit.py:micro_step")
    ]
    assert "again on SGD before update() (first from test_audit.py:micro_step)" in (
        every_micro_step.found[0].detail
    )
    assert sys.getprofile() is None  # the watch is gone with its context


def test_unscale_watch_names_accelerates_clip_on_a_micro_step_that_does_not_sync():
    """On the CPU accelerate has no GradScaler: the clip on every micro-step raises nothing, and
    the watch still names it (it clips partial gradients)."""
    accelerate = pytest.importorskip("accelerate")
    accelerator = accelerate.Accelerator(cpu=True, gradient_accumulation_steps=2)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)

    def train(clip_every_micro_step: bool) -> list:
        with UnscaleWatch() as watch:
            for _ in range(2):
                with accelerator.accumulate(model):
                    accelerator.backward(model(torch.ones(2, 4)).sum())
                    if clip_every_micro_step or accelerator.sync_gradients:
                        accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
                    optimizer.zero_grad()
        return [(h.kind, h.where) for h in watch.found]

    assert train(clip_every_micro_step=False) == []
    assert train(clip_every_micro_step=True) == [("unscale-twice", "test_audit.py:train")]


def test_training_args_watch_names_bf16_asked_where_no_device_runs_it(tmp_path):
    transformers = pytest.importorskip("transformers")
    from transformers.utils.import_utils import is_torch_bf16_gpu_available

    if is_torch_bf16_gpu_available():
        pytest.skip("a device here runs bfloat16: the setup is not the hazard")
    make = functools.partial(transformers.TrainingArguments, output_dir=str(tmp_path), bf16=True)
    make(use_cpu=True)  # its first build imports accelerate: slow under a profile function
    with TrainingArgsWatch() as asked_on_cpu:
        make(use_cpu=True)
    with TrainingArgsWatch() as no_device, contextlib.suppress(ValueError):
        make()  # transformers >= 4.52 refuses it; 4.25 to 4.51 train the CPU in bfloat16
    assert asked_on_cpu.found == []
    assert [(h.kind, h.where, h.detail) for h in no_device.found] == [(
        "bf16-without-device", "TrainingArguments",
        "bf16=True, use_cpu unset, and no device that runs bfloat16",
    )]  # fmt: skip
    assert sys.getprofile() is None  # the watch is gone with its context


def test_pipeline_components_in_another_dtype_than_the_denoiser_are_named():
    components = {"unet": nn.Linear(4, 4).half(), "vae": nn.Conv2d(3, 3, 1), "tokenizer": None,
                  "text_encoder": nn.Linear(4, 4).half()}  # fmt: skip
    found = pipeline_hazards(components)
    assert [(h.kind, h.where) for h in found] == [("component-dtype-mix", "vae")]
    assert "float32 while the unet is float16" in found[0].detail
    components["vae"].half()
    assert pipeline_hazards(components) == []


def test_an_optimizer_stepping_half_weights_is_a_hazard_unless_it_compensates():
    half = nn.Linear(4, 4).to(torch.bfloat16)
    found = optimizer_hazards(torch.optim.AdamW(half.parameters(), lr=1e-5))
    assert [(h.kind, h.where) for h in found] == [("half-optimizer", "AdamW")]
    assert optimizer_hazards(torch.optim.AdamW(nn.Linear(4, 4).parameters(), lr=1e-5)) == []
    optimi = pytest.importorskip("optimi")
    assert optimizer_hazards(optimi.AdamW(half.parameters(), lr=1e-5)) == []  # Kahan: default
    uncompensated = optimi.AdamW(half.parameters(), lr=1e-5, kahan_sum=False)
    assert [h.kind for h in optimizer_hazards(uncompensated)] == ["half-optimizer"]


def test_what_the_guards_saw_becomes_hazards():
    model = nn.Sequential(nn.Linear(4, 4).half())
    with MismatchGuard(model) as calls, contextlib.suppress(RuntimeError):
        model(torch.randn(2, 4))
    overflow = nn.Sequential(nn.Linear(1, 1).half())
    nn.init.constant_(overflow[0].weight, 60000.0)
    with NonFiniteGuard(overflow) as values:
        overflow(torch.full((1, 1), 4.0, dtype=torch.float16))
    kinds = [h.kind for h in seen_hazards(calls, values)]
    assert kinds == ["mismatched-input", "non-finite-output"]
    assert seen_hazards(MismatchGuard(), NonFiniteGuard(), OpWatch()) == []


def test_the_hazard_list_names_each_case_and_finder():
    run = subprocess.run([sys.executable, "-m", "shared.culprit", "--list"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == len(HAZARDS)
    assert "half-fft: " in run.stdout and "(see cases/freeu-fft; found by OpWatch" in run.stdout


class TwoLinears(nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        return self.down(self.up(x))


@pytest.mark.parametrize("peft_lists_its_targets", [True, False])  # peft >= 0.8 / 0.6-0.7
def test_adapters_merged_into_half_weights_are_a_lossy_merge(peft_lists_its_targets):
    peft = pytest.importorskip("peft")

    def merged(dtype: torch.dtype):
        config = peft.LoraConfig(r=2, target_modules=["up", "down"])
        model = peft.get_peft_model(TwoLinears().to(dtype), config)
        assert not [h for h in hazards(model) if h.kind == "lossy-merge"]  # attached: training
        if not peft_lists_its_targets:
            model.base_model.targeted_module_names = []
        model.merge_and_unload()
        return [(h.where, h.detail) for h in hazards(model) if h.kind == "lossy-merge"]

    assert merged(torch.bfloat16) == [("up", "adapters merged into 2 layers of bfloat16 weights")]
    assert merged(torch.float32) == []
