"""The regression matrix: tables from gallery reports, changes named, and one real cheap axis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, read_report, run_gallery

from shared.harness.matrix import main as matrix_main

MESSAGE = "mat1 and mat2 must have the same dtype, but got Float and BFloat16"


def write_report(folder: Path, verdict: str, transformers: str) -> Path:
    """A gallery report (the format shared.harness writes) with one broken variant."""
    folder.mkdir(parents=True)
    error = {"type": "RuntimeError", "message": MESSAGE} if verdict == "REPRODUCED" else None
    report = {
        "case": "demo",
        "title": "Demo",
        "finished": "2026-11-22T12:00:00+00:00",
        "python": "3.11.7",
        "versions": {"torch": "2.13.0", "transformers": transformers, "diffusers": None},
        "cuda_devices": [],
        "variants": [
            {
                "variant": "broken",
                "verdict": verdict,
                "detail": "ran clean; expected RuntimeError matching /mat1/",
                "device": "cpu",
                "error": error,
            }
        ],
    }
    (folder / "demo.json").write_text(json.dumps(report), encoding="utf-8")
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
    assert read_report(pinned, "minicpm")["broken"]["verdict"] == "REPRODUCED"
    assert matrix_main(["collect", "pinned", str(pinned), "--matrix-dir", str(tmp_path)]) == 0

    rows = json.loads((tmp_path / "minicpm.json").read_text(encoding="utf-8"))
    broken = {row["set"]: row for row in rows if row["variant"] == "broken"}
    assert broken["transformers-previous"]["versions"]["transformers"] == "5.22.2"
    assert broken["pinned"]["versions"]["transformers"] != "5.22.2"
    for row in broken.values():
        assert (row["verdict"], row["message"]) == ("REPRODUCED", f"RuntimeError: {MESSAGE}")
