"""The regression matrix: tables from gallery reports, changes named, and one real cheap axis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, read_report, run_gallery

from shared.harness.cli import main
from shared.harness.report import CaseReport, ErrorRecord, Verdict


def matrix_main(argv: list[str]) -> int:
    return main(["matrix", *argv])


MESSAGE = "mat1 and mat2 must have the same dtype, but got Float and BFloat16"


def write_report(
    folder: Path, verdict: str, transformers: str, peft: str | None = None, case: str = "demo"
) -> Path:
    """A gallery report (the one report type the harness writes) with one broken variant."""
    error = ErrorRecord("RuntimeError", "builtins.RuntimeError", MESSAGE, ("x.py:f",))
    CaseReport(
        case=case,
        title="Demo",
        finished="2026-11-22T12:00:00+00:00",
        python="3.11.7",
        versions={
            "torch": "2.13.0",
            "transformers": transformers,
            "diffusers": None,
            "peft": peft,
        },  # fmt: skip
        cuda_devices=[],
        variants=[
            Verdict(
                kind=verdict,
                detail="ran clean; expected RuntimeError matching /mat1/",
                variant="broken",
                device="cpu",
                error=error if verdict == "REPRODUCED" else None,
            )
        ],
    ).write(folder)
    return folder


def test_each_set_is_a_column_with_the_message_seen(tmp_path, capsys):
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    old = write_report(runs / "old", "REPRODUCED", "5.22.2")
    new = write_report(runs / "new", "REPRODUCED", "5.23.0")
    for library_set, folder in (("old", old), ("new", new)):
        assert (
            matrix_main(["collect", library_set, str(folder), "--matrix-dir", str(matrix_dir)]) == 0
        )
    table = (matrix_dir / "matrix.md").read_text(encoding="utf-8")
    assert "**new**<br>torch 2.13.0, transformers 5.23.0" in table
    assert "**old**<br>torch 2.13.0, transformers 5.22.2" in table
    assert table.count(f"REPRODUCED (cpu): `RuntimeError: {MESSAGE}`") == 2
    rows = json.loads((matrix_dir / "demo.json").read_text(encoding="utf-8"))
    assert {(row["set"], row["variant"], row["verdict"]) for row in rows} == {
        ("new", "broken", "REPRODUCED"),
        ("old", "broken", "REPRODUCED"),
    }
    assert "diffusers" not in rows[0]["versions"]  # not installed: not shown


def test_a_change_fails_the_set_and_is_named(tmp_path, capsys):
    folder = write_report(tmp_path / "runs" / "upgrade", "NOT-REPRODUCED", "9.0.0")
    status = matrix_main(["collect", "upgrade", str(folder), "--matrix-dir", str(tmp_path / "m")])
    assert status == 1
    assert "matrix: CHANGED on upgrade: demo/broken NOT-REPRODUCED" in capsys.readouterr().err
    assert (
        "NOT-REPRODUCED (cpu): `ran clean; expected" in (tmp_path / "m" / "matrix.md").read_text()
    )


def test_no_reports_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    assert (
        matrix_main(["collect", "x", str(tmp_path / "empty"), "--matrix-dir", str(tmp_path)]) == 2
    )


def test_two_transformers_versions_over_the_pinned_torch(tmp_path):
    """The cheap axis CI runs for real: `transformers-previous` in its own nox environment,
    then this environment's (pinned) set, into one table."""
    env = {
        **os.environ,
        "GALLERY_MATRIX_DIR": str(tmp_path),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    run = subprocess.run(
        [sys.executable, "-m", "nox", "-s", "matrix(transformers-previous)"],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=1200,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    pinned = tmp_path / "pinned-run"
    assert run_gallery("minicpm", report_dir=pinned).returncode == 0
    assert read_report(pinned, "minicpm")["broken"]["kind"] == "REPRODUCED"
    assert matrix_main(["collect", "pinned", str(pinned), "--matrix-dir", str(tmp_path)]) == 0

    rows = json.loads((tmp_path / "minicpm.json").read_text(encoding="utf-8"))
    broken = {row["set"]: row for row in rows if row["variant"] == "broken"}
    assert broken["transformers-previous"]["versions"]["transformers"] == "5.22.2"
    assert broken["pinned"]["versions"]["transformers"] != "5.22.2"
    for row in broken.values():
        assert (row["verdict"], row["message"]) == ("REPRODUCED", f"RuntimeError: {MESSAGE}")


def test_flips_name_the_library_and_the_measured_versions_on_either_side(tmp_path, capsys):
    """Outcomes that change with one library's version are read off the runs, not written."""
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    sets = {"peft-old": ("REPRODUCED", "0.11.1"), "peft-new": ("UNAFFECTED", "0.12.0"),
            "peft-pinned": ("UNAFFECTED", "0.21.2")}  # fmt: skip
    for name, (verdict, peft) in sets.items():
        write_report(runs / name, verdict, "5.23.0", peft=peft)
        matrix_main(["collect", name, str(runs / name), "--matrix-dir", str(matrix_dir)])
    table = (matrix_dir / "matrix.md").read_text(encoding="utf-8")
    assert (
        "- broken: REPRODUCED on peft <= 0.11.1, UNAFFECTED from peft 0.12.0 "
        "(measured on peft-old, peft-new, peft-pinned)"
    ) in table
    (flip,) = json.loads((matrix_dir / "flips.json").read_text(encoding="utf-8"))
    assert flip["package"] == "peft"
    assert [(s["verdict"], s["first"], s["last"]) for s in flip["segments"]] == [
        ("REPRODUCED", "0.11.1", "0.11.1"),
        ("UNAFFECTED", "0.12.0", "0.21.2"),
    ]


def test_a_window_of_versions_is_two_boundaries(tmp_path):
    """transformers 4.38.0-4.38.1 only: broken between two releases that were fine."""
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    for name, verdict, version in (("a", "UNAFFECTED", "4.37.2"), ("b", "REPRODUCED", "4.38.0"),
                                   ("c", "UNAFFECTED", "4.38.2")):  # fmt: skip
        write_report(runs / name, verdict, version)
        matrix_main(["collect", name, str(runs / name), "--matrix-dir", str(matrix_dir)])
    assert (
        "- broken: UNAFFECTED on transformers <= 4.37.2, REPRODUCED on transformers 4.38.0, "
        "UNAFFECTED from transformers 4.38.2 (measured on a, b, c)"
    ) in (matrix_dir / "matrix.md").read_text(encoding="utf-8")


def test_a_flip_with_several_libraries_changing_at_once_says_so(tmp_path):
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    write_report(runs / "old", "REPRODUCED", "4.57.3", peft="0.11.1")
    write_report(runs / "new", "UNAFFECTED", "5.23.0", peft="0.12.0")
    for name in ("old", "new"):
        matrix_main(["collect", name, str(runs / name), "--matrix-dir", str(matrix_dir)])
    table = (matrix_dir / "matrix.md").read_text(encoding="utf-8")
    assert "peft changed at the same step too" in table


def test_a_set_whose_run_did_not_finish_is_an_error(tmp_path, capsys):
    folder = write_report(tmp_path / "runs" / "half", "REPRODUCED", "5.23.0", case="demo")
    argv = ["collect", "half", str(folder), "--matrix-dir", str(tmp_path / "m")]
    assert matrix_main([*argv, "--cases", "demo", "other"]) == 2
    assert "left no report for ['other']" in capsys.readouterr().err
    assert matrix_main([*argv, "--cases", "demo"]) == 0
