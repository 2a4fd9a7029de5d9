"""`explain`: from an error, a traceback, a title or a sentence to the documented case.

Small texts here; tests/explain_texts/ holds real ones (upstream tracebacks, held-out wordings,
near misses, the corpus of real reports) checked in test_explain_texts.py.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from shared.harness import ExitCode
from shared.harness.explain import (
    clean_lines,
    default_catalog,
    describe,
    explain,
    frames_of,
    literal,
    raise_site_matches,
    shape,
)
from shared.harness.explain.claims import USUAL_CAUSE
from shared.harness.explain.differential import LEADS_WHY, asks, describes
from shared.harness.explain.text import pasted_versions

MINICPM_TRACEBACK = """Traceback (most recent call last):
  File "/home/u/MiniCPM-V/finetune/finetune.py", line 301, in <module>
    train()
  File "/home/u/.local/lib/python3.10/site-packages/transformers/trainer.py", line 1537, in train
    return inner_training_loop(
  File "/home/u/.cache/huggingface/modules/transformers_modules/resampler.py", line 150, in forward
    out = self.attn(
  File "/home/u/.local/lib/python3.10/site-packages/torch/nn/functional.py", line 5373, in multi_head_attention_forward
    q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
RuntimeError: mat1 and mat2 must have the same dtype, but got Float and BFloat16
"""  # noqa: E501


def first(text: str):
    return explain(text)[0]


def run_explain(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shared.harness", "explain", *args],
                          cwd=ROOT, capture_output=True, text=True, input=stdin)  # fmt: skip


@pytest.mark.parametrize("paste", [
    MINICPM_TRACEBACK,
    "│ /usr/lib/python3.10/site-packages/torch/nn/functional.py:5373 in multi_head_attention_forward │",
    "File /usr/lib/python3.10/site-packages/torch/nn/functional.py:5373, in multi_head_attention_forward(query)",
    "/usr/lib/python3.10/site-packages/torch/nn/functional.py in multi_head_attention_forward(query, key)",
])  # fmt: skip
def test_frames_are_read_in_plain_rich_and_ipython_forms(paste):
    assert "torch/nn/functional.py:multi_head_attention_forward" in frames_of(paste)


def test_decorations_around_an_error_are_stripped():
    lines = clean_lines("│ ❱ 12 │ x │\n----> 3 model(x)\n!!! Exception during processing !!! "
                        "**You can't move a model**\n[rank0]: `ValueError: boom`")  # fmt: skip
    assert "You can't move a model" in lines and "ValueError: boom" in lines
    assert "model(x)" in lines


def test_an_old_layout_of_a_package_matches_the_raise_site_by_file_and_function():
    site = r"diffusers/models/autoencoders/autoencoder_kl\.py:_decode$"
    assert raise_site_matches(site, "diffusers/models/autoencoder_kl.py:_decode")
    assert not raise_site_matches(site, "mylib/autoencoder_kl.py:_decode")


def test_the_error_is_found_inside_a_sentence_a_title_or_backticks_with_typos():
    for text in ("Why does ValueError: Attempting to unscale FP16 gradients appear when I unfreeze the ViT",
                 "ValueError : Attemting to unscale fp16 Gradients",
                 "I got `Cannot generate a cpu tensor from a generator of type cuda` in my sampler"):
        found = first(text)
        assert found.kind == "case", (text, found)
    assert first("ValueError : Attemting to unscale fp16 Gradients").name == "lora-fp16-gradscaler"


def test_the_direction_of_a_device_mismatch_is_kept():
    """omnilmm's weights are on the CPU, its input on CUDA; the reverse is another failure."""
    documented = "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type " \
        "(torch.HalfTensor) should be the same"
    reverse = documented.replace("torch.cuda.HalfTensor", "X").replace(
        "(torch.HalfTensor)", "(torch.cuda.HalfTensor)").replace("X", "torch.HalfTensor")
    found = first(documented)
    assert (found.kind, found.name) == ("differential", "device-placement"), found
    assert "omnilmm" in found.candidates
    found = first(reverse)  # a CPU input, CUDA weights: inputs left on the CPU lead, unclaimed
    assert (found.kind, found.variant, found.candidates[:1]) == (
        "differential", "broken_to_unassigned", ["inputs-device"]), found
    assert "omnilmm" not in found.candidates
    assert "usually (broken_to_unassigned)" in describe(found, default_catalog(), reverse)
    found = first(documented + "\n(LoRA fine-tuning OmniLMM: MiniCPM-V-2's vision tower)")
    assert (found.kind, found.name) == ("case", "omnilmm"), found
    assert shape("Input type (c10::Half) and bias type (float)") != shape(
        "Input type (float) and bias type (c10::Half)")


def test_a_generic_message_is_a_differential_with_a_check_each_and_the_command_that_settles_it():
    found = first("RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half")
    assert (found.kind, found.name, found.step) == ("differential", "dtype-mix", "differential")
    assert {"onetrainer", "xcomposer"} <= set(found.candidates)
    assert len(found.questions) == 3 and all(found.questions), found
    run = run_explain("mat1 and mat2 must have the same dtype, but got Float and Half")
    assert run.returncode == 0 and run.stdout.startswith("no case claimed"), run.stdout
    assert run.stdout.count("     check: ") == 3
    assert "run it under diagnose: nox -s diagnose -- your_script.py" in run.stdout


def test_a_lost_space_does_not_hide_a_message():
    found = first("error: Expected scalar typeHalf but found Float\nwith SDXL, sporadically")
    assert (found.kind, found.name) == ("differential", "dtype-mix"), found


def test_a_message_wrapped_over_two_lines_is_read_whole():
    wrapped = ("RuntimeError: Input type (torch.FloatTensor) and weight type\n"
               "(torch.cuda.FloatTensor) should be the same")  # fmt: skip
    found = first(wrapped)
    assert (found.kind, found.variant, found.candidates[:1]) == (
        "differential", "broken_to_unassigned", ["inputs-device"]), found
    assert first(wrapped.replace("\n", " ")) == found


def test_a_family_lists_the_cases_of_the_very_message_first():
    found = first("RuntimeError: mat1 and mat2 must have the same dtype, but got BFloat16 and "
                  "Float")  # fmt: skip
    assert found.kind == "differential" and found.candidates[:1] == ["minicpm"], found
    assert len(found.candidates) > 1, found


def test_a_generic_message_names_the_case_that_declares_itself_its_usual_cause():
    """usual_cause_of: torch's message alone, where one case is what nearly always causes it."""
    for text, case in (
        ("`.to` is not supported for `4-bit` or `8-bit` bitsandbytes models", "bnb-quantized-to"),
        # retold in an issue title, its 8-bit half dropped
        ("ValueError when quantizing - (.to) is not supported for 4-bit bitsandbytes models",
         "bnb-quantized-to"),
        # the same check from .half() and .float(), in transformers' older and newer words
        ("ValueError: `.half()` is not supported for `4-bit` or `8-bit` models. Please use the "
         "model as it is, since the model has already been casted to the correct `dtype`.",
         "bnb-quantized-to"),
        ("ValueError: `.float()` is not supported for quantized model. Please use the model as "
         "it is, since the model has already been casted to the correct `dtype`.",
         "bnb-quantized-to"),
        # torch's numpy refusal in an issue title, its "Got" dropped
        ("Infinitetalk broken - wav2 loading unsupported ScalarType BFloat16", "bf16-to-numpy"),
    ):
        found = first(text)
        assert (found.kind, found.name) == ("case", case), (text, found)
        assert found.sureness.startswith("the usual cause of this generic message"), found
        assert "how sure: the usual cause" in describe(found, default_catalog(), text)
    # Its named words are needed, its unless_named words rule it out; an integer clash is no
    # embedding merge.
    for text in ("RuntimeError: expected scalar type Half but found Float",
                 "LoRA training, in backward: expected scalar type Half but found Float",
                 "RuntimeError: Index put requires the source and destination dtypes match, got "
                 "Long for the destination and Int for the source."):  # fmt: skip
        assert first(text).kind in ("differential", "family"), text


def test_a_usual_cause_with_other_common_causes_leads_the_differential_unclaimed():
    """decides = false: a float64 operand (NumPy data, or a .double() in the project's code), a
    floating clash in index_put_ (an embedding merge, or the project's own indexed write), a
    Half/Float clash beside a LoRA (its adapter, or an 8-bit base), a value out of a half
    tensor's range (a float32 minimum filled by DeBERTa's attention, or another fill): the usual
    cause first, with its check, never claimed."""
    for text, case, family in (
        ("RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float",
         "float64-input", "dtype-mix"),
        ("RuntimeError: expected scalar type Float but found Double", "float64-input",
         "dtype-mix"),
        # torch 0.4's tensor-type wording of the same check
        ("RuntimeError: Expected object of type torch.cuda.FloatTensor but found type "
         "torch.cuda.DoubleTensor for argument #2 'mat2'", "float64-input", "dtype-mix"),
        ("inference with my LoRA: RuntimeError: expected scalar type Half but found Float",
         "lora-adapter-dtype", "dtype-mix"),
        ("RuntimeError: Index put requires the source and destination dtypes match, got Half "
         "for the destination and BFloat16 for the source.", "index-put-embed-merge",
         "dtype-mix"),

        # torch's check of any value filled into a half tensor, in each of its type names (an
        # older torch named it bare, the value after it)
        ("RuntimeError: value cannot be converted to type at::Half without overflow",
         "half-mask-fill-overflow", "overflow"),
        ("RuntimeError: value cannot be converted to type c10::BFloat16 without overflow",
         "half-mask-fill-overflow", "overflow"),
        ("RuntimeError: value cannot be converted to type Half without overflow: 960000",
         "half-mask-fill-overflow", "overflow"),
    ):
        found = first(text)
        assert (found.kind, found.name, found.candidates[0]) == ("differential", family, case), (
            text, found)
        assert found.sureness == LEADS_WHY and found.questions[0] == asks(
            default_catalog().cases[case]), found
        assert "no case claimed" in describe(found, default_catalog(), text)


def test_the_bare_meta_tensor_message_claims_its_case_with_every_trigger_and_fix():
    """Torch's meta-tensor copy check is meta-tensor-copy's own (9 in 10 of the tuned reports of
    it): claimed by its usual cause, offload-move (accelerate < 0.22's form) named beside it, and
    the printed answer gives each trigger the case documents with its own fix, since the message
    never says which one left the parameters on meta."""
    text = "NotImplementedError: Cannot copy out of meta tensor; no data!"
    found = first(text)
    assert (found.kind, found.name, found.sureness) == ("case", "meta-tensor-copy", USUAL_CAUSE)
    assert found.candidates == ["offload-move"], found
    printed = describe(found, default_catalog(), text)
    for trigger in ("cause (broken)", "or (broken_offload)", "or (broken_missing_keys)",
                    "fix (fixed_offload)", "fix (fixed_missing_keys)"):
        assert trigger in printed, printed


def test_a_message_no_case_documents_lists_those_with_its_wording_and_other_dtypes():
    """A bfloat16 mask with a float16 query: no case has these dtypes, CPU autocast's mask has
    the wording; an integer clash (labels, indices) is another failure and lists none."""
    found = first("RuntimeError: Expected attn_mask dtype to be bool or float or to match query "
                  "dtype, but got attn_mask.dtype: struct c10::BFloat16 and query.dtype: struct "
                  "c10::Half instead.")  # fmt: skip
    assert (found.kind, found.candidates) == ("family", ["cpu-autocast-mha-mask"]), found
    assert "documented with its wording, other dtypes: cpu-autocast-mha-mask" in describe(
        found, default_catalog(), "")
    found = first("RuntimeError: Index put requires the source and destination dtypes match, "
                  "got Long for the destination and Int for the source.")  # fmt: skip
    assert (found.kind, found.candidates) == ("family", []), found


def test_a_device_message_of_another_argument_says_so_not_other_dtypes():
    """The input on CUDA, a CPU tensor of another op's (torch.cat's): no case documents that
    argument, inputs-device the wording."""
    found = first("RuntimeError: Expected all tensors to be on the same device, but got tensors "
                  "is on cuda:0, different from other tensors on cpu (when checking argument in "
                  "method wrapper_CUDA_cat)")  # fmt: skip
    assert (found.kind, found.candidates) == ("family", ["inputs-device"]), found
    text = describe(found, default_catalog(), "")
    assert "documented with its wording, other tensors or devices: inputs-device" in text, text


def test_either_direction_of_the_embedding_lookup_leads_with_inputs_device_unclaimed():
    """CPU ids met by CUDA weights (the tokenizer's output left behind) and CUDA ids met by CPU
    weights (the model never moved), in both torch wordings: the reports show other causes, or
    none their threads decide, more than 1 in 10 (detr#524, LightRAG#249), so inputs-device leads
    the differential with its question and is never claimed."""
    for ids in ("found at least two devices, cuda:0 and cpu! (when checking argument for "
                "argument index in method wrapper_CUDA__index_select)",
                "got index is on cpu, different from other tensors on cuda:0 (when checking "
                "argument in method wrapper_CUDA__index_select)",
                "found at least two devices, cpu and cuda:0! (when checking argument for "
                "argument index in method wrapper_CUDA__index_select)",
                "got index is on cuda:0, different from other tensors on cpu (when checking "
                "argument in method wrapper_CUDA__index_select)"):  # fmt: skip
        found = first("RuntimeError: Expected all tensors to be on the same device, but " + ids)
        assert (found.kind, found.name, found.candidates[:1]) == (
            "differential", "device-placement", ["inputs-device"]), found
        assert found.sureness == LEADS_WHY, found
        # The reverse declaration names its variant: the answer says which way round it usually is.
        reverse = "cpu and cuda:0!" in ids or "is on cuda:0, different" in ids
        assert found.variant == ("broken_model_not_moved" if reverse else ""), found
        text = describe(found, default_catalog(), ids)
        assert ("usually (broken_model_not_moved): tokenizer(...).to('cuda'), the model never "
                "moved" in text) == reverse, text


def test_generates_warning_names_the_variant_of_its_direction():
    """generate's warning decides inputs-device (CPU ids, a CUDA model), also above the device
    check it led to; the reverse (a model never moved, or one its loader partly offloaded to the
    CPU: textgen#787) leads with its variant, unclaimed."""
    warning = ("UserWarning: You are calling .generate() with the `input_ids` being on a device "
               "type different than your model's device. `input_ids` is on cpu, whereas the "
               "model is on cuda. You may experience unexpected behaviors or slower generation.")
    found = first(warning)
    assert (found.kind, found.name) == ("case", "inputs-device"), found
    check = ("RuntimeError: Expected all tensors to be on the same device, but got index is on "
             "cpu, different from other tensors on cuda:0 (when checking argument in method "
             "wrapper_CUDA__index_select)")
    found = first(check)  # the device check alone leads, unclaimed
    assert (found.kind, found.candidates[:1]) == ("differential", ["inputs-device"]), found
    found = first(check + "\n" + warning)
    assert (found.kind, found.name) == ("case", "inputs-device"), found
    reverse = warning.replace("is on cpu, whereas the model is on cuda",
                              "is on cuda, whereas the model is on cpu")  # fmt: skip
    found = first(reverse)  # the model left on the CPU: not inputs left there
    assert (found.kind, found.candidates[:1], found.variant) == (
        "differential", ["inputs-device"], "broken_model_not_moved"), found


def test_a_cpu_mat2_of_a_cuda_matmul_leads_with_inputs_device_unclaimed():
    """mat2 of a CUDA matmul on the CPU: the dossier's fixed-device helper, or a module left on
    the CPU (ComfyUI-PuLID-Flux#91): inputs-device leads the differential, never claimed."""
    found = first("RuntimeError: Expected all tensors to be on the same device, but got mat2 is on "
                  "cpu, different from other tensors on cuda:0 (when checking argument in method "
                  "wrapper_CUDA_mm)")  # fmt: skip
    assert (found.kind, found.name, found.candidates[:1]) == (
        "differential", "device-placement", ["inputs-device"]), found
    assert found.sureness == LEADS_WHY, found


def test_a_cpu_test_elements_or_loss_target_leads_with_inputs_device():
    """isin's CPU test_elements (a logits processor built by hand), and a loss's CPU target (the
    labels) for CUDA predictions, are wordings of the device check inputs-device leads for,
    unclaimed."""
    for text in (
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
        "and cpu! (when checking argument for argument test_elements in method "
        "wrapper_CUDA_isin_Tensor_Tensor)",
        "Expected all tensors to be on the same device, but got test_elements is on cpu, "
        "different from other tensors on cuda:0 (when checking argument in method "
        "wrapper_CUDA_isin_Tensor_Tensor)",
        "Expected all tensors to be on the same device, but found at least two devices, cuda:1 "
        "and cpu! (when checking argument for argument target in method "
        "wrapper_CUDA_nll_loss2d_forward)",
        "Expected all tensors to be on the same device, but got target is on cpu, different "
        "from other tensors on cuda:0 (when checking argument in method "
        "wrapper_CUDA_nll_loss_forward)",
    ):
        found = first(text)
        assert (found.kind, found.name, found.candidates[:1]) == (
            "differential", "device-placement", ["inputs-device"]), found


def test_the_cuda_wording_is_the_cpu_one():
    assert shape("expected mat1 and mat2 to have the same dtype, but got: c10::Half != float") == \
        shape("mat1 and mat2 must have the same dtype, but got Half and Float")


def test_an_anchor_names_the_case_behind_a_generic_message():
    assert (first(MINICPM_TRACEBACK).kind, first(MINICPM_TRACEBACK).name) == ("case", "minicpm")


@pytest.mark.parametrize(("text", "case"), [
    ("my stable diffusion images come out all black in fp16", "sdxl-vae-fp16"),
    ("SDXL gives a blank image with the fp16 VAE", "sdxl-vae-fp16"),
    ("T5 encoder outputs nan in half precision", "t5-half"),
    ("after merge_and_unload the QLoRA adapter has no effect", "qlora-merge-4bit"),
])  # fmt: skip
def test_symptom_words_never_claim_a_case_they_rank_it_first_in_a_differential(text, case):
    found = first(text)
    assert (found.kind, found.step) == ("differential", "differential"), found
    assert found.candidates[0] == case and len(found.candidates) <= 3, found
    assert len(found.questions) == len(found.candidates) and all(found.questions), found


@pytest.mark.parametrize(("text", "case"), [
    ("my text classifier keeps its convolutions in a python list; after model.cuda() the list "
     "of conv layers still sits on the CPU", "omnilmm"),
    ("Submodules defined in a plain list are not registered: after .to('cuda') they stay on the "
     "cpu", "omnilmm"),
    ("ControlNet training: the vae encode gives nan latents, so the loss is nan", "sdxl-vae-fp16"),
    ("训练时发现vae编码出来的latent是nan", "sdxl-vae-fp16"),
    ("Please use nn.ModuleList instead of a python list: the heads stay on the cpu after .cuda()",
     "omnilmm"),
    # the same three said the other way round: list first, a dict of metrics, no verb
    ("the decoders sit in a plain list instead of a ModuleList, so .to(device) skips them",
     "omnilmm"),
    ("a dictionary of metrics stays on the cpu when the module moves to the gpu", "omnilmm"),
    ("Encoder sub-modules not registered, so model.cuda() leaves them behind", "omnilmm"),
    ("after model.to('cuda') the blocks are still on the CPU:\n"
     "    self.blocks = []\n    for i in range(4):\n        self.blocks.append(nn.Linear(8, 8))",
     "omnilmm"),
    ("DQN training crashes as soon as the env returns float64 observations", "float64-input"),
    ("the EMA copy is kept in bf16, so its small increments get rounded away",
     "bf16-pure-training"),
    ("only the model was moved: the batch was not moved to the GPU", "inputs-device"),
    ("the model is on the GPU but the input tensors stay on the CPU", "inputs-device"),
    # the fix said as a pull request's title says it
    ("evaluate: move all tensors to the right device before the forward", "inputs-device"),
    ("make sure the input tensors are on the correct device in predict()", "inputs-device"),
    ("the VAE overflows in fp16 during img2img", "sdxl-vae-fp16"),
    ("with fp16 the product of q and k overflows before the softmax", "sd21-upcast-attention"),
    ("position embeddings kept as a buffer get cast to bfloat16 with the model", "rope-bf16"),
])  # fmt: skip
def test_a_description_stating_a_mechanism_ranks_its_case_first_on_any_model(text, case):
    """A case's `describes`: the mechanism in a user's words (modules kept in a list, a VAE
    turning out NaN, float64 data, updates rounded away) ranks the case first though the text
    names none of its title's models; a candidate, never a claim."""
    found = first(text)
    assert (found.kind, found.step, found.candidates[:1]) == (
        "differential", "differential", [case]), found
    assert describes(default_catalog().cases[case], text)


def test_a_description_names_no_family_but_the_command_that_finds_the_module():
    """Black images with NaN from a model no case documents: an fp16 overflow, or a GPU that
    runs no float16 right, read alike; no family, no SDXL fix, the run that tells them apart."""
    found = first("Flux images come out black with NaN values in fp16")
    assert (found.kind, found.name, found.family) == ("none", "", ""), found
    run = run_explain("Flux images come out black with NaN values in fp16")
    assert run.returncode == ExitCode.NO_MATCH, run
    assert run.stdout.startswith("no documented case") and "force_upcast" not in run.stdout
    assert "python -m shared.culprit run your_script.py" in run.stdout, run.stdout


# Issue 31's classes of wrong claims: each is a class, the texts below one instance of it.
SAMPLER_TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 40, in <module>
    for batch in loader:
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 631, in next
    data = self._next_data()
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/sampler.py", line 164, in __iter__
    yield from torch.randperm(n, generator=generator).tolist()
RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'
"""


def test_a_cases_message_raised_in_another_libraries_frame_is_not_claimed():
    """torch's generator check raised by the DataLoader's sampler (a CUDA default tensor type),
    not by the user's torch.randn: the innermost frame tells them apart."""
    found = first(SAMPLER_TRACEBACK)
    assert found.kind != "case" and "torch/utils/data/sampler.py" in found.sureness, found
    # Without a frame the message does not say which: a differential naming the case.
    bare = first("RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'")
    assert (bare.kind, bare.candidates) == ("differential", ["generator-device"]), bare


def test_a_raise_line_quoting_more_than_a_cases_message_is_another_checks_wording():
    """accelerate 0.15 refuses fp16 on a CUDA-less torch with "fp16 mixed precision requires a
    GPU" (the case, documented as ending there); later releases' check quotes "(not
    {self.device.type!r})" after it and is reached only off the CPU: a traceback's raise line
    showing that template is not the case's failure, whatever device it names."""
    frame = '  File "/Users/u/accelerate/src/accelerate/accelerator.py", line 495, in __init__\n'
    later = frame + ('    raise ValueError(f"fp16 mixed precision requires a GPU '
                     '(not {self.device.type!r}).")')
    found = first(later)
    assert found.kind != "case" and "goes on past this case's" in found.sureness, found
    assert "accelerate-fp16-no-cuda" in found.candidates, found
    own = frame + '    raise ValueError("fp16 mixed precision requires a GPU")'
    assert (first(own).kind, first(own).name) == ("case", "accelerate-fp16-no-cuda")


def test_both_tensors_on_cuda_with_two_dtypes_is_a_dtype_clash_not_placement():
    for text in ("RuntimeError: Input type (torch.cuda.HalfTensor) and weight type "
                 "(torch.cuda.FloatTensor) should be the same",
                 "RuntimeError: Input type (CUDAFloatTensor) and weight type (CUDAHalfTensor) "
                 "should be the same",
                 "RuntimeError: Expected tensor for argument #1 'grad_output' to have the same "
                 "type as tensor for argument #2 'weight'; but type torch.cuda.HalfTensor does not "
                 "equal torch.cuda.FloatTensor",
                 # an integer image fed to half weights: no floating class on one side
                 "RuntimeError: Input type (torch.cuda.ByteTensor) and weight type "
                 "(torch.cuda.HalfTensor) should be the same"):  # fmt: skip
        found = first(text)
        assert found.kind != "case" and found.family == found.name == "dtype-mix", (text, found)
    for text in ("Input type (torch.cuda.HalfTensor) and weight type (torch.HalfTensor)",
                 "Input type (torch.cuda.ByteTensor) and weight type (torch.HalfTensor)"):
        assert first(text).name == "device-placement", first(text)


def test_pasted_versions_documented_as_not_failing_contradict_the_claim():
    """SDPA's mask check names the clash, not its cause (a float mask under CPU autocast, or a
    half model's own float32 mask): alone it claims nothing; a frame of the case's raise site
    anchors it, and pasted versions documented as not failing then contradict the claim."""
    message = ("RuntimeError: Expected attn_mask dtype to be bool or to match query dtype, but "
               "got attn_mask.dtype: float and query.dtype: c10::BFloat16 instead.")  # fmt: skip
    assert first(message).kind == "differential"
    assert first(message).candidates[0] == "cpu-autocast-mha-mask"
    text = ('  File "/opt/venv/lib/python3.10/site-packages/transformers/models/llama/'
            'modeling_llama.py", line 611, in forward\n'
            "    attn_output = torch.nn.functional.scaled_dot_product_attention(\n" + message)
    assert (first(text).kind, first(text).name) == ("case", "cpu-autocast-mha-mask")
    found = first(text + "\ntorch==2.4.0")
    assert found.kind == "differential" and "documented as not failing" in found.sureness, found
    assert found.candidates[0] == "cpu-autocast-mha-mask"


def test_a_paste_that_ends_with_another_error_is_not_claimed_on_an_earlier_warning():
    warning = ("UserWarning: You are calling .generate() with the `input_ids` being on a device "
               "type different than your model's device. `input_ids` is on cpu, whereas the model "
               "is on cuda.")  # fmt: skip
    assert first(warning).name == "inputs-device"
    found = first(warning + "\nKeyError: 'pixel_values'")
    assert found.kind != "case", found


def test_the_source_line_of_the_raise_is_the_error_it_raises():
    """Python's traceback prints the raise that the exception line then reports: a claim
    resting on that source line rests on the paste's own last error, even one no documented
    message or family knows; any other line is not that error."""
    from shared.harness.explain.frames import ends_elsewhere
    from shared.harness.explain.parse import parse

    catalog = default_catalog()
    message = "the widget refused to frobnicate its 7 inputs"
    source = f'    raise ValueError("{message}")'
    paste = parse('  File "/opt/lib/python3.10/site-packages/widget/core.py", line 12, in run\n'
                  f"{source}\nValueError: {message}", catalog)  # fmt: skip
    assert not ends_elsewhere(paste, source, catalog)
    assert ends_elsewhere(paste, '    raise ValueError("another refusal")', catalog)
    # accelerate's bf16 refusal, quoted by its raise: the message's usual cause leads, unclaimed
    # (its tuned record, 6 of 7: Apple's MPS refused too, unnamed in the paste)
    message = "bf16 mixed precision requires PyTorch >= 1.10 and a supported device."
    found = first('  File "/usr/lib/python3.10/dist-packages/accelerate/accelerator.py", line 474\n'
                  f'    raise ValueError("{message}")\nValueError: {message}')  # fmt: skip
    assert (found.kind, found.family, found.candidates[:1]) == (
        "differential", "hardware", ["bf16-unsupported-setup"]), found


def test_stable_diffusion_1_named_implies_no_sdxl():
    """"stable diffusion" alone may be SDXL (its synonyms name it, a documented message's
    anchor); a paste naming SD 1.x and not SDXL names no SDXL case's subject."""
    warning = "\nRuntimeWarning: invalid value encountered in cast"
    xl = first('black image, StableDiffusionPipeline.from_pretrained("stabilityai/'
               'stable-diffusion-xl-base-1.0", torch_dtype=torch.float16)' + warning)
    assert (xl.kind, xl.name) == ("case", "sdxl-vae-fp16"), xl
    for model in ("CompVis/stable-diffusion-v1-4", "runwayml/stable-diffusion-v1-5"):
        found = first(f'black image in stable diffusion, StableDiffusionPipeline.from_pretrained('
                      f'"{model}", torch_dtype=torch.float16)' + warning)  # fmt: skip
        assert found.kind != "case", (model, found)


def test_stable_diffusion_2_named_by_its_checkpoint_or_config_is_sd2():
    """SD 2.x named only by its files (v2-1_768-ema-pruned.ckpt, 512-base-ema.ckpt,
    v2-inference-v.yaml), as "SD 2.1" names it: its attention overflow is among the
    candidates for a black image; SD 1.x's config names no SD 2.x."""
    for named in ("the v2-1_768-ema-pruned.ckpt model", "the 512-base-ema.ckpt model",
                  "config from v2-inference-v.yaml", "SD 2.1"):
        found = first(f"I only get a black square output with {named}, no error")
        assert "sd21-upcast-attention" in found.candidates[:3], (named, found)
    sd1 = first("I only get a black square output with config from v1-inference.yaml, no error")
    assert "sd21-upcast-attention" not in sd1.candidates[:3], sd1


def test_a_named_fix_states_the_mechanism():
    """A description naming the fix that worked (attention upcast to float32, a black image)
    puts the case whose fix it is first in the differential: it claims nothing, and without
    the fix named the same description names no case first."""
    black = "Black images after a few steps on my Mac with the Karras scheduler, no error."
    found = first(black + " Solved it with --force-upcast-attention.")
    assert found.kind == "differential", found
    assert found.candidates[:1] == ["sd21-upcast-attention"], found
    assert first(black).candidates[:1] != ["sd21-upcast-attention"]


def test_the_rotary_table_named_in_half_states_rope_bf16():
    """"inv_freq ... converted to bfloat16" states rope-bf16's mechanism on any model: it leads
    the differential, claims nothing; "no rope" beside bf16 does not."""
    found = first("When we use model.bfloat16().cuda(), inv_freq will be converted to bfloat16 "
                  "even though we defined it in float32, so positions are not represented right.")
    assert found.kind == "differential" and found.candidates[:1] == ["rope-bf16"], found
    found = first("Training in bf16, gradient_checkpointing, no rope: the weights barely change.")
    assert found.candidates[:1] != ["rope-bf16"], found


def test_a_legacy_type_names_device_decides_the_family():
    """torch 0.4-1.0 named tensor types with their device: two names that differ only in
    "cuda." are a placement clash, two dtypes a dtype one; the legacy constructor's refusal of a
    tensor of the other device too."""
    for text, family in (
        ("RuntimeError: expected type torch.cuda.FloatTensor but got torch.FloatTensor",
         "device-placement"),
        ("RuntimeError: Expected object of type torch.cuda.FloatTensor but found type "
         "torch.FloatTensor for argument #2 'weight'", "device-placement"),
        ("RuntimeError: Expected object of type Variable[torch.FloatTensor] but found type "
         "Variable[torch.DoubleTensor] for argument #1 'mat1'", "dtype-mix"),
        ("RuntimeError: expected type torch.DoubleTensor but got torch.FloatTensor", "dtype-mix"),
        ("TypeError: expected CUDA (got CPU)", "device-placement"),
    ):  # fmt: skip
        found = first(text)
        assert (found.kind, found.family) == ("family", family), (text, found)
    # a side cut by a terminal's wrap ("torch .LongTensor"): neither family can be read
    found = first("RuntimeError: Expected object of type torch.cuda.LongTensor but found type "
                  "torch .LongTensor for argument #3 'index'")
    assert found.family != "dtype-mix", found


def test_a_generator_asked_for_a_meta_tensor_is_the_meta_devices_problem():
    """"Cannot generate a meta tensor from a generator of type cuda": latents drawn on a model's
    meta device (an offloading profile), the meta-tensors family, not a generator's placement."""
    found = first("Error: Cannot generate a meta tensor from a generator of type cuda.")
    assert found.family == "meta-tensors", found
    found = first("RuntimeError: Cannot generate a cpu tensor from a generator of type cuda.")
    assert found.family == "device-placement", found


def test_an_extension_kernel_is_not_torchs_backend():
    """A generic refusal raised in an extension's own operator (torch.ops.<extension>) is that
    extension's kernel, not torch's CPU backend that cpu-fp16-kernels documents: the family."""
    op = ("    return torch.ops.torch_scatter.scatter_max(src, index, dim, out, dim_size)\n"
          "RuntimeError: \"scatter\" not implemented for 'Half'")
    found = first("Using torch.cuda.amp.autocast with torch_scatter:\n" + op)
    assert (found.kind, found.family) == ("family", "unsupported-dtype"), found
    found = first("RuntimeError: \"scatter\" not implemented for 'Half'")  # torch's own: the case
    assert (found.kind, found.name) == ("case", "cpu-fp16-kernels"), found
    # The extension's CPU code reaching torch's own kernel, which the message names by its
    # backend (torch 1.x: "... not supported on CPUType for Half"): torch's kernel, the case.
    found = first("    return torch.ops.my_ext.roi_pool(input, rois, scale)\n"
                  "RuntimeError: _th_mm not supported on CPUType for Half")
    assert (found.kind, found.name) == ("case", "cpu-fp16-kernels"), found


def test_a_missing_half_kernel_on_another_accelerator_is_not_torchs_cpu_backend():
    """A kernel refusing Half where the paste names another accelerator's backend (Intel's XPU
    op library, Apple's MPS) is that backend's gap: the family; named on the CPU: the case."""
    message = "RuntimeError: \"replication_pad1d\" not implemented for 'Half'"
    found = first("float16 inference on the xpu device fails:\n" + message)
    assert (found.kind, found.family) == ("family", "unsupported-dtype"), found
    found = first("float16 inference on the cpu (the xpu was busy) fails:\n" + message)
    assert (found.kind, found.name) == ("case", "cpu-fp16-kernels"), found


def test_a_path_through_a_pytorch_folder_names_no_torch_version():
    """"envs/pytorch/lib/python3.10" is Python's version in a folder's name, not torch 3.10: it
    contradicts no case's versions, where a pasted torch 2.4 does (the SDPA mask case)."""
    assert pasted_versions('File "/home/u/envs/pytorch/lib/python3.9/site-packages/x.py"') == {}
    assert pasted_versions("torch 2.3.1, transformers==4.40") == {
        "torch": "2.3.1", "transformers": "4.40"}
    frame = ('  File "/home/u/envs/pytorch/lib/python3.10/site-packages/transformers/models/llama/'
             'modeling_llama.py", line 611, in forward\n'
             "    attn_output = torch.nn.functional.scaled_dot_product_attention(\n"
             "RuntimeError: Expected attn_mask dtype to be bool or to match query dtype, but got "
             "attn_mask.dtype: float and query.dtype: c10::BFloat16 instead.")
    assert (first(frame).kind, first(frame).name) == ("case", "cpu-autocast-mha-mask")
    assert first(frame + "\ntorch==2.4.0").kind == "differential"


def test_a_kernel_named_for_the_gpu_is_not_torchs_cpu_backend():
    """A kernel whose name says GPU (an extension's CUDA op, TorchProteinLibrary#36), or an
    extension's `<op>_forward` entry point (detectron2's ROIAlign_forward), refusing Half is no
    CPU kernel of torch's: the family. The same message escaped inside a quoted error (a JSON
    reply, a repr) is read as pasted plain: the case."""
    found = first("    _FullAtomModel.Coords2CenterGPU_forward( input_coords, output_center, "
                  "num_atoms)\nRuntimeError: \"Coords2CenterGPU_forward\" not implemented for "
                  "'Half'")
    assert (found.kind, found.family) == ("family", "unsupported-dtype"), found
    found = first("RuntimeError: \"PSROIPool_forward\" not implemented for 'Half'")
    assert (found.kind, found.family) == ("family", "unsupported-dtype"), found
    found = first("requests.exceptions.HTTPError: {'message': "
                  "'\"LayerNormKernelImpl\" not implemented for \\'Half\\''}")
    assert (found.kind, found.name) == ("case", "cpu-fp16-kernels"), found


def test_an_fft_refusing_half_leads_with_freeu_and_claims_it_only_from_its_raise_site():
    """torch's FFT dtype check is FreeU's failure inside diffusers' fourier_filter (its raise
    site: the case), and is also torch's own half FFT missing for a script's bare torch.fft call
    (pytorch#70664): alone it leads the differential, unclaimed (its record: 2 of 3)."""
    found = first("    y = torch.fft.rfft2(x)\nRuntimeError: Unsupported dtype Half")
    assert found.kind == "differential" and found.candidates[:1] == ["freeu-fft"], found
    found = first('  File "/opt/venv/lib/python3.10/site-packages/diffusers/utils/torch_utils.py", '
                  "line 121, in fourier_filter\n    x_freq = fftn(x, dim=(-2, -1))\n"
                  "RuntimeError: Unsupported dtype BFloat16")
    assert (found.kind, found.name) == ("case", "freeu-fft"), found


def test_other_wordings_of_a_check_are_read():
    """The older flat-parameter wording (declared its usual cause beside a LoRA), NumPy's
    refusal of bfloat16 (bf16-to-numpy's usual cause), and messages only a family documents
    (an RNN's own device check, diffusers' refusal to cast a quantized model, AUTOMATIC1111's NaN
    check): the family, never a case from the sentence's other words."""
    found = first("ValueError: FlatParameter requires uniform dtype but got torch.float32 and "
                  "torch.bfloat16 (FSDP with a peft LoRA)")  # fmt: skip
    assert (found.kind, found.name) == ("case", "fsdp-lora-flat-dtype"), found
    found = first("TypeError: Got unsupported ScalarType BFloat16")
    assert (found.kind, found.name) == ("case", "bf16-to-numpy"), found
    for text, family in (("ValueError: Flash Attention 2.0 only supports torch.float16 and "
                          "torch.bfloat16 dtypes", "unsupported-dtype"),
                         ("TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS "
                          "framework doesn't support float64. Please use float32 instead.",
                          "hardware"),
                         ("ptxas /tmp/compile-ptx-src, line 100; error   : Feature 'cvt with "
                          ".f32.bf16' requires .target sm_80 or higher", "hardware"),
                         ("RuntimeError: Input and hidden tensors are not at the same device, "
                          "found input tensor at cuda:0 and hidden tensor at cpu",
                          "device-placement"),
                         ("ValueError: Casting a quantized model to a new `dtype` is unsupported. "
                          "To set the dtype of unquantized layers, please use the `torch_dtype` "
                          "argument", "quantization"),
                         ("modules.devices.NansException: A tensor with all NaNs was produced in "
                          "VAE. This could be because there's not enough precision to represent "
                          "the picture.", "overflow")):  # fmt: skip
        found = first(text)
        assert (found.kind, found.name) == ("family", family), (text, found)
    # AUTOMATIC1111's check of the UNet on an SD 2.x model: sd21-upcast-attention leads
    found = first("NansException: A tensor with all NaNs was produced in Unet. Try setting the "
                  "\"Upcast cross attention layer to float32\" option (v2-1_768-ema-pruned, "
                  "stable-diffusion-2-1)")  # fmt: skip
    assert found.kind == "differential" and found.candidates[:1] == ["sd21-upcast-attention"], found
    # an RNN's dtype check, float64 data against float32 parameters: float64-input leads
    found = first("RuntimeError: Input and parameter tensors are not the same dtype, found input "
                  "tensor with Double and parameter tensor with Float")  # fmt: skip
    assert found.kind == "differential" and found.candidates[:1] == ["float64-input"], found


@pytest.mark.parametrize("text", [
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB",
    "ValueError: too many values to unpack (expected 2)",
])  # fmt: skip
def test_a_near_miss_names_no_case_and_exits_with_no_match(text):
    """Nothing fits: no documented case, no case named from boilerplate, its own exit code."""
    found = first(text)
    assert (found.kind, found.candidates) == ("none", []), found
    run = run_explain(text)
    assert run.returncode == ExitCode.NO_MATCH == 5, run
    assert run.stdout.startswith("no documented case; closest: none")


@pytest.mark.parametrize("text", [
    "RuntimeError: CUDA error: device-side assert triggered",
    "torch.AcceleratorError: CUDA error: device-side assert triggered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call",
])  # fmt: skip
def test_a_device_side_assert_alone_names_no_case_and_no_family(text):
    """The line a CUDA kernel's assert leaves names no failure (gemma3-fp16-overflow documents it
    on CUDA, as any case whose kernel asserts could): no case, no family, and the answer says
    where the failure is told."""
    found = first(text)
    assert (found.kind, found.family, found.candidates) == ("none", "", []), found
    assert "CUDA_LAUNCH_BLOCKING=1" in run_explain(text).stdout


SAMPLING_NAN = """Traceback (most recent call last):
  File "/home/u/chat.py", line 20, in <module>
    out = model.generate(**inputs, do_sample=True)
  File "/usr/lib/python3.10/site-packages/transformers/generation/utils.py", line 3249, in _sample
    next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
RuntimeError: probability tensor contains either `inf`, `nan` or element < 0
"""


def test_a_raise_site_every_model_passes_through_ties_no_case():
    """Every model samples in transformers' _sample: the raise site gemma3-fp16-overflow
    documents there decides nothing (a differential naming it); the model's name does."""
    found = first(SAMPLING_NAN)
    assert (found.kind, found.candidates[:1]) == ("differential", ["gemma3-fp16-overflow"]), found
    named = first(SAMPLING_NAN.replace("chat.py", "gemma3_chat.py") + "Gemma 3 in float16\n")
    assert (named.kind, named.name) == ("case", "gemma3-fp16-overflow"), named


def test_the_answer_is_short_and_whole():
    run = run_explain("--file", "-", stdin="ValueError: Attempting to unscale FP16 gradients.\n"
                      "torch==2.1.0 peft==0.10.0")  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) <= 12 and all(len(line) <= 300 for line in lines), run.stdout
    text = run.stdout
    for needle in ("lora-fp16-gradscaler:", "how sure: documented message", "cause (",
                   "fix (fixed", "cast_training_params(", "where:", "your versions (",
                   "run it: nox -s case-lora-fp16-gradscaler"):  # fmt: skip
        assert needle in text, text


def test_a_declared_fix_is_shown_whole():
    run = run_explain("ValueError: Cannot generate a cpu tensor from a generator of type cuda.")
    assert default_catalog().cases["generator-device"].fix in run.stdout


def test_json_for_tools():
    run = run_explain("--json", "SDXL gives a black image")
    found = json.loads(run.stdout)
    assert run.returncode == 0 and found[0]["kind"] == "differential", found
    assert found[0]["candidates"][0] == "sdxl-vae-fp16" and found[0]["step"] == "differential"


@pytest.mark.parametrize("args", [[], [""], ["--file", "/nonexistent/tb.txt"]])
def test_bad_input_exits_2(args):
    run = run_explain(*args)
    assert run.returncode == 2 and run.stderr.startswith("explain: error:")


def test_documented_patterns_read_as_the_text_they_match():
    assert literal(r"^Input type \((struct )?c10::Half\) and bias type \(float\)$") == (
        "Input type (c10::Half) and bias type (float)")  # fmt: skip


# Issue 31, the classes the first held-out half's misses showed (it is in the tuned half now).
def test_a_warning_issued_in_another_file_is_not_the_cases_warning():
    """NumPy's cast warning issued from an application's own file (a ComfyUI node), not from
    diffusers' image processor the SDXL case documents: its site contradicts the claim, even
    with SDXL named; issued where the case documents it, the claim stands."""
    elsewhere = first("SDXL black image\nComfyUI\\nodes.py:1585: RuntimeWarning: invalid value "
                      "encountered in cast")  # fmt: skip
    assert elsewhere.kind != "case" and "ComfyUI/nodes.py" in elsewhere.sureness, elsewhere
    assert elsewhere.name == "overflow", elsewhere
    documented = first("SDXL black image\nC:\\venv\\Lib\\site-packages\\diffusers\\image_processor"
                       ".py:147: RuntimeWarning: invalid value encountered in cast")  # fmt: skip
    assert (documented.kind, documented.name) == ("case", "sdxl-vae-fp16"), documented


def test_a_nan_rules_out_a_case_whose_symptom_is_no_nan():
    """bf16-pure-training's and rope-bf16's failures give no NaN: a NaN loss is never theirs."""
    catalog = default_catalog()
    assert {"bf16-pure-training", "rope-bf16"} <= catalog.without_nan
    assert "t5-half" not in catalog.without_nan  # NaN under fp16 autocast
    quiet = first("bf16 training does not learn, the weights do not change")
    assert "bf16-pure-training" in quiet.candidates, quiet
    nan = first("bf16 training does not learn, the loss is nan")
    assert "bf16-pure-training" not in nan.candidates, nan


def test_diffusers_warning_for_a_float16_pipeline_on_the_cpu_leads_with_the_missing_half_kernels():
    """The warning also shows where a node only stashes the pipeline on the CPU to free VRAM
    (the tuned reports: 3 of 4 its case): the case leads the differential, unclaimed."""
    found = first("Pipelines loaded with `dtype=torch.float16` cannot run with `cpu` device. It is "
                  "not recommended to move them to `cpu` as running them will fail.")  # fmt: skip
    assert (found.kind, found.name) == ("differential", "unsupported-dtype"), found
    assert found.candidates[0] == "cpu-fp16-kernels", found


@pytest.mark.parametrize(("text", "family"), [
    # torch 1.0-1.1's binary op check: a backend and a dtype each side
    ("RuntimeError: expected backend CUDA and dtype Float but got backend CPU and dtype Float",
     "device-placement"),
    ("RuntimeError: expected backend CUDA and dtype Float but got backend CUDA and dtype Byte",
     "dtype-mix"),
    # torch 1.x TensorIterator's: a device and a dtype each side, then the device alone
    ("RuntimeError: expected device cuda:0 and dtype Half but got device cpu and dtype Half",
     "device-placement"),
    ("RuntimeError: expected device cuda:1 and dtype Float but got device cuda:1 and dtype Half",
     "dtype-mix"),
    ("RuntimeError: expected device cpu but got device cuda:1", "device-placement"),
])  # fmt: skip
def test_torch_1_x_binary_op_wordings_are_read_from_both_sides(text, family):
    """Two devices are a placement clash, one device with two dtypes a dtype clash: a family
    each, never no answer."""
    found = first(text)
    assert (found.kind, found.name) == ("family", family), found


def test_torch_1_x_conv_check_of_a_cpu_input_leads_with_inputs_device():
    """A CPU input for CUDA conv weights, in torch 1.x's wording either operand named: the
    input never moved leads the differential, unclaimed; the reverse (a CPU weight) does not."""
    for text in ("RuntimeError: Expected object of device type cuda but got device type cpu for "
                 "argument #1 'self' in call to _thnn_conv2d_forward",
                 "RuntimeError: Expected object of backend CPU but got backend CUDA for argument "
                 "#2 'weight'"):  # fmt: skip
        found = first(text)
        assert (found.kind, found.name) == ("differential", "device-placement"), found
        assert found.candidates[:1] == ["inputs-device"], found
    found = first("RuntimeError: Expected object of backend CUDA but got backend CPU for argument "
                  "#2 'weight'")  # fmt: skip
    assert "inputs-device" not in found.candidates and found.name == "device-placement", found
    found = first("RuntimeError: get_device is not implemented for type torch.LongTensor")
    assert (found.kind, found.name) == ("family", "device-placement"), found


@pytest.mark.parametrize(("description", "case"), [
    ("Fix gradient clipping when doing gradient accumulation with mixed precision.",
     "gradscaler-unscale-twice"),
    ("You should only call scaler.unscale_() in iterations where you step when accumulating "
     "gradients.", "gradscaler-unscale-twice"),
    ("When calling Net.to() to move it to a device, its sub-models are not registered as "
     "nn.Modules, so they stay behind.", "omnilmm"),
    ("Some datasets might be stored in float64, so the samples are now cast before training.",
     "float64-input"),
    ("Also the input tokens weren't getting put on the GPU when the model was run.",
     "inputs-device"),
    ("Move the attention mask to the model device, or else there is a device mismatch.",
     "inputs-device"),
    ("`Tensor.cuda()` returns a copy of the tensor on the device, therefore `X.cuda()` needs to "
     "be `X = X.cuda()`.", "inputs-device"),
    ("Fix: moving input data to device.", "inputs-device"),
    ("P.S. the half precision is not supported in the cpu version.", "cpu-fp16-kernels"),
    ("The positions come from torch.arange, and under zero.Init() the position ids are created "
     "in bfloat16.", "rope-bf16"),
    ("Clip the constants to the bfloat16 range when running under XLA.",
     "half-mask-fill-overflow"),
    ("Since the model is on 'cuda', the validation batch must be on the same device.",
     "inputs-device"),
    ("The collate function forgot to move the pixel_values to the right device.",
     "inputs-device"),
    ("Division with cpu fp16 not supported, so the normalization step fails.",
     "cpu-fp16-kernels"),
    ("With the module on GPU and the data on CPU, scoring breaks.", "inputs-device"),
    ("Metrics kept inside a dictionary on the LightningModule stay on the CPU after .to(device).",
     "omnilmm"),
])
def test_a_description_in_a_case_s_words_puts_it_among_the_candidates(description, case):
    """A description saying a case's mechanism in a pull request's words (`describes`): the
    case is a candidate of the differential, never claimed from words."""
    found = first(description)
    assert found.kind != "case" and case in found.candidates, found


def test_whispers_fp16_fallback_warning_is_no_cpu_kernel_failure():
    """Whisper's own warning (it falls back to float32 on the CPU and runs on) says half is not
    supported on the CPU, but nothing failed: cpu-fp16-kernels is no candidate."""
    found = first("FP16 not supported on CPU, slow speeds.\nUserWarning: FP16 is not supported on "
                  "CPU; using FP32 instead")
    assert "cpu-fp16-kernels" not in [found.name, *found.candidates], found


def test_a_quantized_side_of_a_dtype_clash_is_the_quantization_family():
    """Weights stored in float8, or a matmul's weight (mat2) in an 8-bit integer dtype (int8 or
    packed 4-bit uint8), meeting the compute dtype: a quantized storage format cast too late,
    whatever torch check refuses it; the same clash without them, or an 8-bit input for float
    weights (a uint8 image), stays a dtype mix."""
    for text in ("RuntimeError: Input type (struct c10::Half) and bias type "
                 "(struct c10::Float8_e4m3fn) should be the same",
                 "RuntimeError: mat1 and mat2 must have the same dtype, but got Float and "
                 "Float8_e4m3fn",
                 "RuntimeError: Promotion for Float8 Types is not supported, attempted to promote "
                 "Float and Float8_e5m2",
                 "RuntimeError: self and mat2 must have the same dtype, but got Half and Byte",
                 "RuntimeError: mat1 and mat2 must have the same dtype, but got BFloat16 and Char"):
        found = first(text)
        assert found.kind in ("family", "differential") and found.name == "quantization", found
    for text in ("RuntimeError: mat1 and mat2 must have the same dtype, but got Float and Half",
                 "RuntimeError: Input type (Byte) and weight type (Float) should be the same"):
        found = first(text)
        assert found.name != "quantization" and found.family == "dtype-mix", found


def test_a_float_only_accessor_refusing_half_is_a_missing_kernel_not_a_dtype_mix():
    """torch 1.x's data<float> / data_ptr<float> accessor says where a kernel (an extension's,
    such as DCN's) reads its tensors as float only: a half tensor there has no kernel (the
    unsupported-dtype family); float64 there is float64 data meeting a float path, still a dtype
    mix, as is the same message without the accessor."""
    for accessor in ("data", "data_ptr"):
        found = first("RuntimeError: expected scalar type Float but found Half "
                      f"({accessor}<float> at /opt/torch/include/ATen/core/TensorMethods.h:1821)")
        assert found.kind == "family" and found.name == "unsupported-dtype", found
    for text in ("RuntimeError: expected scalar type Float but found Double(data<float> at "
                 "/usr/lib/torch/include/ATen/core/TensorMethods.h:1386)",
                 "RuntimeError: expected scalar type Float but found Half"):
        found = first(text)
        assert found.family == "dtype-mix", found


def test_only_a_message_names_a_family_never_the_words_around_an_unknown_error():
    """An error no documented message and no family's message matches, however its words lean
    (black images, fp16): no family; the message a family knows: that family."""
    found = first("RuntimeError: the final images are always black, ComfyUI started with "
                  "--fp16-vae")
    assert (found.kind, found.name, found.family) == ("none", "", ""), found
    assert "shared.culprit run" in found.sureness
    found = first("RuntimeError: Expected all tensors to be on the same device, but found at "
                  "least two devices, cuda:1 and cuda:0!")  # two GPUs: no case's usual cause
    assert (found.kind, found.name) == ("family", "device-placement"), found


def test_a_case_s_subject_is_the_names_its_title_gives_before_the_colon():
    """The names a symptom description must say for a case to be a candidate: proper names,
    never the common words around them; names joined by " / " are one name."""
    subjects = default_catalog().subjects
    assert subjects["sdxl-vae-fp16"] == [["sdxl"]] and subjects["gemma3-fp16-overflow"] == [
        ["gemma3"]]
    assert subjects["gradscaler-unscale-twice"] == [["gradscaler"]]  # not "with accumulation"
    assert subjects["fsdp-lora-flat-dtype"] == [["fsdp"], ["lora"]]
    assert subjects["omnilmm"] == [["minicpm", "omnilmm"]]  # either name
    assert subjects["chroma-float-mask"] == [["chroma"]]  # a capitalised name past the first
    assert subjects["cpu-fp16-kernels"] == []  # "torch on the CPU": a library and a device
    # A mask constant past float16's range described on another model than DeBERTa's
    found = first("Transformer attention energy.masked_fill(mask == 0, -1e10) on 16-bit "
                  "precision: the -1e10 can't be converted to half")  # fmt: skip
    assert "half-mask-fill-overflow" in found.candidates[:3], found


def test_a_dtype_clash_beside_a_quantized_base_names_no_family():
    """A quantized base's layers give a generic dtype clash as often as a plain mix does (both
    read alike): no family is named there; without one, the clash is dtype-mix."""
    plain = "RuntimeError: expected scalar type Float but found Half"
    assert (first(plain).kind, first(plain).name) == ("family", "dtype-mix"), first(plain)
    for text in (plain + "\nthe base model is loaded with load_in_8bit=True",
                 "GPTQ model: " + plain):  # fmt: skip
        found = first(text)
        assert (found.kind, found.name, found.family) == ("none", "", ""), (text, found)
        assert "quantized base" in found.sureness


def test_torch_1_0s_wording_of_a_missing_half_kernel_reads_its_device_from_the_tensor_type():
    """"_th_index_select is not implemented for type torch.HalfTensor" (torch 0.4 wrote
    "not_implemented"): the CPU type is cpu-fp16-kernels' mechanism; the CUDA type names no case,
    only the family."""
    found = first("RuntimeError: _th_index_select is not implemented for type torch.HalfTensor")
    assert (found.kind, found.name) == ("case", "cpu-fp16-kernels"), found
    found = first("RuntimeError: thnn_conv2d_forward is not_implemented for type torch.HalfTensor")
    assert (found.kind, found.name) == ("case", "cpu-fp16-kernels"), found
    found = first("RuntimeError: _th_index_select is not implemented for type "
                  "torch.cuda.HalfTensor")  # fmt: skip
    assert found.kind != "case" and found.family in ("unsupported-dtype", ""), found
