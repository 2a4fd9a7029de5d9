"""The regression matrix: one store of run reports, tables and flips generated from it, changes
named, bisections attached to the flips they locate, and one real cheap axis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, read_report, run_gallery

from shared.harness.catalog import case_names, load_case
from shared.harness.cli import main
from shared.harness.library_sets import (
    LibrarySetError,
    custom_set,
    dated_set,
    library_set,
    named_sets,
    sweep_dates,
)
from shared.harness.matrix import all_rows, flips, table_text
from shared.harness.report import Bisection, CaseReport, ErrorRecord, Probe, Verdict


def matrix_main(argv: list[str]) -> int:
    return main(["matrix", *argv])


def collect(matrix_dir: Path, library_set: str, folder: Path) -> int:
    return matrix_main(["collect", library_set, str(folder), "--matrix-dir", str(matrix_dir)])


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
    for name, folder in (("old", old), ("new", new)):
        assert collect(matrix_dir, name, folder) == 0
    capsys.readouterr()
    assert matrix_main(["table", "--matrix-dir", str(matrix_dir)]) == 0
    table = capsys.readouterr().out
    assert "**new**<br>torch 2.13.0, transformers 5.23.0" in table
    assert "**old**<br>torch 2.13.0, transformers 5.22.2" in table
    assert table.count(f"REPRODUCED (cpu): `RuntimeError: {MESSAGE}`") == 2
    assert "diffusers" not in table  # not installed: not shown
    # The store is the run report itself, and nothing derived is written beside it.
    stored = CaseReport.read(matrix_dir / "sets" / "new" / "demo.json")
    assert stored == CaseReport.read(new / "demo.json")
    assert sorted(p.relative_to(matrix_dir).as_posix() for p in matrix_dir.rglob("*.*")) == [
        "sets/new/demo.json", "sets/old/demo.json"]  # fmt: skip


def test_a_set_collected_again_replaces_the_reports_of_the_cases_it_ran(tmp_path):
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    assert collect(matrix_dir, "s", write_report(runs / "a", "REPRODUCED", "5.23.0")) == 0
    assert collect(matrix_dir, "s", write_report(runs / "b", "REPRODUCED", "5.23.0", case="x")) == 0
    assert collect(matrix_dir, "s", write_report(runs / "c", "UNAFFECTED", "5.23.0", case="x")) == 0
    stored = {p.name: CaseReport.read(p) for p in (matrix_dir / "sets" / "s").iterdir()}
    assert sorted(stored) == ["demo.json", "x.json"]
    assert stored["x.json"].verdict("broken").kind == "UNAFFECTED"  # the latest run of x


def test_a_change_fails_the_set_and_is_named(tmp_path, capsys):
    folder = write_report(tmp_path / "runs" / "upgrade", "NOT-REPRODUCED", "9.0.0")
    assert collect(tmp_path / "m", "upgrade", folder) == 1
    captured = capsys.readouterr()
    assert "matrix: CHANGED on upgrade: demo/broken NOT-REPRODUCED" in captured.err
    assert "NOT-REPRODUCED (cpu): `ran clean; expected" in captured.out


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
    assert collect(tmp_path, "pinned", pinned) == 0

    broken = {
        path.parent.name: CaseReport.read(path)
        for path in (tmp_path / "sets").glob("*/minicpm.json")
    }
    assert broken["transformers-previous"].versions["transformers"] == "5.22.2"
    assert broken["pinned"].versions["transformers"] != "5.22.2"
    for report in broken.values():
        verdict = report.verdict("broken")
        assert (verdict.kind, verdict.error.message) == ("REPRODUCED", MESSAGE)


def test_flips_name_the_library_and_the_measured_versions_on_either_side(tmp_path, capsys):
    """Outcomes that change with one library's version are read off the runs, not written."""
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    sets = {"peft-old": ("REPRODUCED", "0.11.1"), "peft-new": ("UNAFFECTED", "0.12.0"),
            "peft-pinned": ("UNAFFECTED", "0.21.2")}  # fmt: skip
    for name, (verdict, peft) in sets.items():
        collect(matrix_dir, name, write_report(runs / name, verdict, "5.23.0", peft=peft))
    assert (
        "- broken: REPRODUCED on peft <= 0.11.1, UNAFFECTED from peft 0.12.0 [not bisected] "
        "(measured on peft-old, peft-new, peft-pinned)"
    ) in table_text(matrix_dir)
    (flip,) = flips(all_rows(matrix_dir))
    assert flip["package"] == "peft"
    assert [(s["verdict"], s["first"], s["last"]) for s in flip["segments"]] == [
        ("REPRODUCED", "0.11.1", "0.11.1"),
        ("UNAFFECTED", "0.12.0", "0.21.2"),
    ]


def bisection(first: str, last: str, *, flaky: bool = False) -> Bisection:
    return Bisection(
        case="demo", variant="broken", package="peft", base="pinned", versions={},
        releases=["0.11.0", last, first], probes=[Probe(first, "UNAFFECTED")],
        verdict_before="REPRODUCED", verdict_after="UNAFFECTED", last_before=last,
        first_changed=first, flaky=flaky, installs=3, seconds=60.0, finished="2026-11-23",
    )  # fmt: skip


def test_a_bisection_gives_a_flip_its_first_release(tmp_path):
    """The sets measured 0.11.0 and 0.13.2; the bisection found the first release between."""
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    for name, (verdict, peft) in {"a": ("REPRODUCED", "0.11.0"),
                                  "b": ("UNAFFECTED", "0.13.2")}.items():  # fmt: skip
        collect(matrix_dir, name, write_report(runs / name, verdict, "5.23.0", peft=peft))
    bisection("0.12.0", "0.11.1", flaky=True).write(matrix_dir / "bisections")
    assert "UNAFFECTED from peft 0.13.2 [not bisected]" in table_text(matrix_dir)  # flaky: no
    bisection("0.12.0", "0.11.1").write(matrix_dir / "bisections")
    assert (
        "UNAFFECTED from peft 0.13.2 [first release: 0.12.0, after 0.11.1; bisected over pinned]"
    ) in table_text(matrix_dir)
    bisection("0.12.0", "0.11.1").write(matrix_dir / "bisections").unlink()
    bisection("0.14.0", "0.13.2").write(matrix_dir / "bisections")  # outside the cut: not it
    assert "[not bisected]" in table_text(matrix_dir)


def test_a_window_of_versions_is_two_boundaries(tmp_path):
    """transformers 4.38.0-4.38.1 only: broken between two releases that were fine."""
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    for name, verdict, version in (("a", "UNAFFECTED", "4.37.2"), ("b", "REPRODUCED", "4.38.0"),
                                   ("c", "UNAFFECTED", "4.38.2")):  # fmt: skip
        collect(matrix_dir, name, write_report(runs / name, verdict, version))
    assert (
        "- broken: UNAFFECTED on transformers <= 4.37.2, REPRODUCED on transformers 4.38.0 "
        "[not bisected], UNAFFECTED from transformers 4.38.2 [not bisected] (measured on a, b, c)"
    ) in table_text(matrix_dir)


def test_a_flip_with_several_libraries_changing_at_once_says_so(tmp_path):
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    collect(matrix_dir, "old", write_report(runs / "old", "REPRODUCED", "4.57.3", peft="0.11.1"))
    collect(matrix_dir, "new", write_report(runs / "new", "UNAFFECTED", "5.23.0", peft="0.12.0"))
    assert "peft changed at the same step too" in table_text(matrix_dir)


def test_a_set_whose_run_did_not_finish_is_an_error(tmp_path, capsys):
    folder = write_report(tmp_path / "runs" / "half", "REPRODUCED", "5.23.0", case="demo")
    argv = ["collect", "half", str(folder), "--matrix-dir", str(tmp_path / "m")]
    assert matrix_main([*argv, "--cases", "demo", "other"]) == 2
    assert "left no report for ['other']" in capsys.readouterr().err
    assert matrix_main([*argv, "--cases", "demo"]) == 0


def test_which_cases_a_set_runs_is_decided_in_one_place(capsys):
    """Dated sets run each case from its era_start on; named sets as pyproject says."""
    sweep = sweep_dates()
    assert len(sweep) >= 11 and sweep == sorted(sweep)
    first = dated_set(sweep[0])
    assert first.name == f"as-of-{sweep[0]}" and first.as_of == sweep[0]
    assert first.install_args == ("--exclude-newer", sweep[0].isoformat())
    for name in case_names():
        assert (name in first.cases) == (load_case(name).era_start <= sweep[0])
    assert set(dated_set(sweep[-1]).cases) == set(case_names())
    assert not any("==" in spec for spec in first.requirements)  # the date decides versions
    # A date outside the sweep is a user's question about that stack: every case runs.
    assert set(custom_set(["--as-of", "2024-06-30"]).cases) == set(case_names())
    assert custom_set(["--as-of", "2024-06-30", "numpy<2"]).requirements[-1] == "numpy<2"
    assert "torch==2.16.0" in custom_set(["torch==2.16.0"]).requirements
    assert matrix_main(["cases", "transformers-previous"]) == 0
    assert capsys.readouterr().out.split() == list(library_set("transformers-previous").cases)
    assert library_set("transformers-previous").cases == ("minicpm",)
    assert set(named_sets()) >= {"pinned", "latest", f"as-of-{sweep[-1]}"}


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [(["--as-of"], "needs a date"), (["--as-of", "June"], "not a date"),
     (["--as-of", "2999-01-01"], "in the future"), ([], "name a set")],
)  # fmt: skip
def test_a_set_that_cannot_be_honoured_says_what_to_give(arguments, complaint):
    with pytest.raises(LibrarySetError, match=complaint):
        custom_set(arguments)


def test_an_unknown_set_is_refused_naming_the_known_ones(capsys):
    assert matrix_main(["cases", "nope"]) == 2
    assert "unknown library set 'nope'; known: pinned" in capsys.readouterr().err
