"""The one report type: what the harness writes is what the matrix, the site and tests read."""

from __future__ import annotations

import pytest

from shared.harness.paths import REPO_ROOT, relative, relative_text
from shared.harness.report import CaseReport, ErrorRecord, ProcessResult, Verdict, WarningRecord


def raise_here():
    raise RuntimeError("mat1 and mat2 must have the same dtype\nsecond line")


def test_an_error_record_is_relative_and_names_its_raise_site():
    with pytest.raises(RuntimeError) as caught:
        raise_here()
    error = ErrorRecord.of(caught.value)
    assert error.first_line == "RuntimeError: mat1 and mat2 must have the same dtype"
    assert error.raise_site == "tests/test_report.py:raise_here"
    assert not any(frame.startswith("/") for frame in error.frames)


def test_an_error_message_naming_a_file_names_it_relative():
    """As a library's ImportError does (torch-optimi 0.3 on torch < 2.4): no machine path in a
    report."""
    library = "/env/lib/python3.11/site-packages/torch/utils/_foreach_utils.py"
    with pytest.raises(ImportError) as caught:
        raise ImportError(f"cannot import name 'x' from 'torch.utils' ({library}); {REPO_ROOT}/a")
    error = ErrorRecord.of(caught.value)
    assert error.message == (
        "cannot import name 'x' from 'torch.utils' (torch/utils/_foreach_utils.py); a"
    )


def test_a_library_error_under_a_watcher_is_the_librarys_not_the_gallerys():
    """OpWatch (a TorchFunctionMode) passes every torch call on: the error CPU torch raises for
    a bfloat16 FFT (freeu-fft's broken variants on some stacks) is raised by torch, in the
    caller's frame, never in shared/culprit/, and not in the gallery's code."""
    import torch

    from shared.culprit import OpWatch

    with pytest.raises(RuntimeError, match="BFloat16") as caught, OpWatch():
        torch.fft.fftn(torch.randn(8, 8, dtype=torch.bfloat16))
    error = ErrorRecord.of(caught.value, (REPO_ROOT / "shared",))
    assert not [frame for frame in error.frames if frame.startswith("shared/culprit")], error
    assert error.raise_site.startswith("tests/test_report.py:test_a_library_error_under")
    assert not error.in_gallery


def test_a_case_report_round_trips_through_json(tmp_path):
    error = ErrorRecord("RuntimeError", "builtins.RuntimeError", "boom", ("torch/x.py:f",))
    verdict = Verdict(
        kind="REPRODUCED", detail="d", variant="broken", error=error, silent=True,
        warnings=[WarningRecord("RuntimeWarning", "cast", "diffusers/image_processor.py:143")],
        measurements=[{"label": "x", "measure": "nan_fraction", "value": 1.0, "detail": ""}],
    )  # fmt: skip
    report = CaseReport("demo", "Demo", "2026-11-23T00:00:00+00:00", "3.11.7",
                        {"torch": "2.13.0"}, [], [verdict])  # fmt: skip
    assert CaseReport.read(report.write(tmp_path)) == report
    assert CaseReport.read(tmp_path / "demo.json").verdict("broken").error.raise_site == (
        "torch/x.py:f"
    )


def test_an_unknown_field_is_refused_not_dropped(tmp_path):
    path = tmp_path / "result.json"
    ProcessResult(status="clean").write(path)
    path.write_text(path.read_text().replace('"status"', '"state"'), encoding="utf-8")
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['state'\]"):
        ProcessResult.read(path)


def test_paths_are_made_relative_to_site_packages_or_the_repository():
    library = "/opt/venv/lib/python3.11/site-packages/torch/nn/functional.py"
    assert relative(library) == "torch/nn/functional.py"
    assert relative(REPO_ROOT / "cases" / "x" / "broken.py") == "cases/x/broken.py"
    text = f'  File "{library}", line 5\n{REPO_ROOT}/cases/x/broken.py:3: UserWarning'
    assert (
        relative_text(text)
        == '  File "torch/nn/functional.py", line 5\ncases/x/broken.py:3: UserWarning'
    )


def test_a_variant_s_temporary_folders_are_stored_without_their_random_names():
    """A stored text must not change from run to run: the variant's TMPDIR is said as such and
    the gallery's own temporary folders lose their random part; the committed store holds none."""
    text = (f"no config in {REPO_ROOT}/.gallery/work/run-9nthj__u/qlora-merge-4bit/broken_bf16/"
            "tmp/gallery-checkpoint-xh7gu_ot - will assume; /tmp/gallery-checkpoint-z61ha6nd/a")
    assert relative_text(text) == (
        "no config in $TMPDIR/gallery-checkpoint-XXXXXXXX - will assume; "
        "/tmp/gallery-checkpoint-XXXXXXXX/a"
    )
    stored = [path for path in (REPO_ROOT / "reports").rglob("*.json")
              if relative_text(content := path.read_text(encoding="utf-8")) != content]  # fmt: skip
    assert stored == []


def test_an_error_raised_around_the_script_is_the_gallerys_whatever_raised_it():
    """The executor's own steps after the script (module paths, hazards) raise into the variant's
    record: a traceback that never passed through the script is the gallery's failure, even a
    library's RuntimeError; one through the script is judged as the script's."""
    from shared.harness import verdicts

    script = REPO_ROOT / "cases" / "demo" / "fixed.py"
    gallery = (script.parent, REPO_ROOT / "shared")
    executor = str(REPO_ROOT / "shared" / "harness" / "executor.py")
    library = "/venv/lib/python3.11/site-packages/torch/_tensor.py"
    around = {"type": "RuntimeError", "qualified_type": "builtins.RuntimeError", "message": "x",
              "frames": [(executor, "execute"), (library, "__deepcopy__")]}  # fmt: skip
    through = {**around, "frames": [(executor, "execute"), (str(script), "<module>"),
                                    (library, "__deepcopy__")]}  # fmt: skip
    blamed = ErrorRecord.from_raised(around, gallery, script)
    assert blamed.around_script and verdicts._blame(blamed) == verdicts.GALLERY_FAILED
    judged = ErrorRecord.from_raised(through, gallery, script)
    assert not judged.around_script and verdicts._blame(judged) == ""
