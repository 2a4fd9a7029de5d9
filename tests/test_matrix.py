"""The regression matrix: one store (a measurement record), tables and flips generated from it,
changes named, bisections attached to the flips they locate, the store's conversion and its
completeness check. Installing sets for real (from a local index): test_matrix_environments.py."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from shared.harness import store
from shared.harness.catalog import case_names, load_case
from shared.harness.cli import main
from shared.harness.library_sets import (
    UNDECLARED_IMPORTS,
    LibrarySetError,
    custom_set,
    dated_set,
    library_set,
    named_sets,
    sweep_dates,
)
from shared.harness.matrix import ENVIRONMENT_FILE, all_rows, declared_cells, flips, table_text
from shared.harness.paths import MATRIX_DIR
from shared.harness.report import Bisection, CaseReport, ErrorRecord, Probe, Verdict


def matrix_main(argv: list[str]) -> int:
    return main(["matrix", *argv])


def collect(matrix_dir: Path, library_set: str, folder: Path) -> int:
    table = matrix_dir.parent / "table.md"
    return matrix_main(["collect", library_set, str(folder), "--matrix-dir", str(matrix_dir),
                        "--table", str(table)])  # fmt: skip


MESSAGE = "mat1 and mat2 must have the same dtype, but got Float and BFloat16"


def write_report(
    folder: Path,
    verdict: str,
    transformers: str,
    peft: str | None = None,
    case: str = "demo",
    torch: str = "2.13.0",
) -> Path:
    """A gallery report (the one report type the harness writes) with one broken variant."""
    error = ErrorRecord("RuntimeError", "builtins.RuntimeError", MESSAGE + "\nmore lines",
                        ("x.py:f",))  # fmt: skip
    installed = {"torch": torch, "transformers": transformers, "numpy": "2.4.6"}
    if peft:
        installed["peft"] = peft
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ENVIRONMENT_FILE).write_text(json.dumps({
        "set": folder.name, "asked": {"requirements": [f"transformers=={transformers}"]},
        "installed": installed, "python": "3.11.7", "machine": "Linux x86_64"}))  # fmt: skip
    CaseReport(
        case=case,
        title="Demo",
        finished="2026-11-22T12:00:00+00:00",
        python="3.11.7",
        versions={
            "torch": torch,
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
                note="the case's note, copied",
                output_tail="what it printed\n" * 40,
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
    # The store: a header per set (what was asked, every package installed), a record per case
    # (rows without the case's note or the printed output; the error line and frames stay),
    # and nothing derived beside them.
    header = json.loads((matrix_dir / "sets" / "new" / "set.json").read_text())
    (environment,) = header["environments"]
    assert environment["installed"] == {"numpy": "2.4.6", "torch": "2.13.0",
                                        "transformers": "5.23.0"}  # fmt: skip
    assert environment["asked"] == {"requirements": ["transformers==5.23.0"]}
    assert (environment["python"], environment["machine"], environment["complete"]) == (
        "3.11.7", "Linux x86_64", True)  # fmt: skip
    record = json.loads((matrix_dir / "sets" / "new" / "demo.json").read_text())
    assert record["environment"] == environment["id"]
    (row,) = record["variants"]
    assert "note" not in row and "output_tail" not in row and "title" not in record
    assert row["error"]["message"] == MESSAGE and row["error"]["frames"] == ["x.py:f"]
    assert sorted(p.relative_to(matrix_dir).as_posix() for p in matrix_dir.rglob("*.*")) == [
        "sets/new/demo.json",
        "sets/new/set.json",
        "sets/old/demo.json",
        "sets/old/set.json",
    ]


def test_a_set_collected_again_replaces_the_reports_of_the_cases_it_ran(tmp_path):
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    assert collect(matrix_dir, "s", write_report(runs / "a", "REPRODUCED", "5.23.0")) == 0
    assert collect(matrix_dir, "s", write_report(runs / "b", "REPRODUCED", "5.23.0", case="x")) == 0
    assert collect(matrix_dir, "s", write_report(runs / "c", "UNAFFECTED", "5.23.0", case="x")) == 0
    stored = {p.name: json.loads(p.read_text()) for p in (matrix_dir / "sets" / "s").iterdir()}
    assert sorted(stored) == ["demo.json", "set.json", "x.json"]
    assert stored["x.json"]["variants"][0]["kind"] == "UNAFFECTED"  # the latest run of x
    # One environment: runs on the same stack share it; one no case refers to is dropped.
    assert len(stored["set.json"]["environments"]) == 1
    assert collect(matrix_dir, "s", write_report(runs / "d", "REPRODUCED", "5.24.0")) == 0
    assert collect(matrix_dir, "s", write_report(runs / "e", "REPRODUCED", "5.24.0", case="x")) == 0
    header = json.loads((matrix_dir / "sets" / "s" / "set.json").read_text())
    assert [env["installed"]["transformers"] for env in header["environments"]] == ["5.24.0"]


def test_a_change_fails_the_set_and_is_named_last_the_table_in_a_file(tmp_path, capsys):
    folder = write_report(tmp_path / "runs" / "upgrade", "NOT-REPRODUCED", "9.0.0")
    assert collect(tmp_path / "m", "upgrade", folder) == 1
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines()[-1] == (
        "matrix: CHANGED on upgrade: demo/broken NOT-REPRODUCED: ran clean; expected RuntimeError "
        "matching /mat1/")  # fmt: skip
    assert captured.out.splitlines() == [
        f"matrix: the table of every stored set: {tmp_path / 'table.md'}",
        f"matrix: upgrade, stored in {tmp_path / 'm' / 'sets' / 'upgrade'}:",
        "  demo/broken: NOT-REPRODUCED (cpu): ran clean; expected RuntimeError matching /mat1/",
        "matrix: upgrade: 0 as documented, 0 skipped, 1 changed",
    ]  # the table is not printed: it is in the file
    assert "NOT-REPRODUCED (cpu): `ran clean; expected" in (tmp_path / "table.md").read_text()


def test_a_set_whose_environment_was_not_recorded_is_an_error(tmp_path, capsys):
    folder = write_report(tmp_path / "runs" / "x", "REPRODUCED", "5.23.0")
    (folder / ENVIRONMENT_FILE).unlink()
    assert collect(tmp_path / "m", "x", folder) == 2
    assert "the set's environment was not recorded" in capsys.readouterr().err


def test_no_reports_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    assert (
        matrix_main(["collect", "x", str(tmp_path / "empty"), "--matrix-dir", str(tmp_path)]) == 2
    )


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


def test_a_flip_is_one_librarys_when_some_pair_across_the_cut_differs_in_it_alone(tmp_path):
    """Other stacks at the versions either side of a cut (another torch) do not hide the two
    sets that differ in the library alone, whatever order the sets sort in."""
    runs, matrix_dir = tmp_path / "runs", tmp_path / "matrix"
    # Sets of one version sort by name: the users' stacks are the ones next to the cut.
    for name, verdict, peft, torch in (
        ("peft-old", "REPRODUCED", "0.11.1", "2.13.0"), ("z-user", "REPRODUCED", "0.11.1", "2.3.1"),
        ("a-user", "UNAFFECTED", "0.12.0", "2.5.1"), ("peft-new", "UNAFFECTED", "0.12.0", "2.13.0"),
    ):  # fmt: skip
        collect(matrix_dir, name, write_report(runs / name, verdict, "5.23.0", peft, torch=torch))
    (flip,) = flips(all_rows(matrix_dir))
    assert (flip["package"], flip["also_changed"]) == ("peft", [])
    shutil.rmtree(matrix_dir / "sets" / "peft-new")  # now every pair across the cut differs
    (flip,) = flips(all_rows(matrix_dir))
    assert flip["also_changed"] == ["torch"]


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
    # What old releases import undeclared reaches every set by one rule: a set names it only
    # to bound its version (accelerate 0.16 needs setuptools < 80 for pkg_resources), never bare.
    for name in named_sets():
        chosen = library_set(name)
        assert not set(UNDECLARED_IMPORTS) & set(chosen.requirements)
        resolved = {Requirement(spec).name for spec in chosen.to_resolve}
        assert set(UNDECLARED_IMPORTS) <= resolved
    # A date outside the sweep is a user's question about that stack: every case runs.
    assert set(custom_set(["--as-of", "2024-06-30"]).cases) == set(case_names())
    assert custom_set(["--as-of", "2024-06-30"]).name == "as-of-2024-06-30"
    with_numpy = custom_set(["--as-of", "2024-06-30", "numpy<2"])
    assert with_numpy.requirements[-1] == "numpy<2"
    assert with_numpy.name.startswith("as-of-2024-06-30-")  # another stack: not the date's
    assert "torch==2.16.0" in custom_set(["torch==2.16.0"]).requirements
    assert matrix_main(["cases", "transformers-previous"]) == 0
    assert capsys.readouterr().out.split() == list(library_set("transformers-previous").cases)
    assert library_set("transformers-previous").cases == ("minicpm",)
    assert set(named_sets()) >= {"pinned", "latest", f"as-of-{sweep[-1]}"}


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [(["--as-of"], "needs a date"), (["--as-of", "June"], "not a date"),
     (["--as-of", "2999-01-01"], "in the future"), ([], "name a set"),
     (["--as-of", "2025-05-15", "minicpm"], "minicpm is a case, not a requirement"),
     (["torch==2.4.1", "minicpm"], "minicpm is a case, not a requirement")],
)  # fmt: skip
def test_a_set_that_cannot_be_honoured_says_what_to_give(arguments, complaint):
    with pytest.raises(LibrarySetError, match=complaint):
        custom_set(arguments)


def test_an_unknown_set_is_refused_naming_the_known_ones(capsys):
    assert matrix_main(["cases", "nope"]) == 2
    assert "unknown library set 'nope'; known: pinned" in capsys.readouterr().err


def test_a_custom_set_is_named_by_its_content_and_read_from_a_requirements_file(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(
        "# our stack\ntorch==2.4.1 \\\n    --hash=sha256:abc\n-r more.txt\n\n", encoding="utf-8"
    )
    (tmp_path / "more.txt").write_text("transformers==4.44.2  # pinned\n", encoding="utf-8")
    from_file = custom_set(["-r", str(requirements), "numpy<2"])
    typed = custom_set(["torch==2.4.1", "transformers==4.44.2", "numpy<2"])
    assert from_file.requirements[-3:] == ("torch==2.4.1", "transformers==4.44.2", "numpy<2")
    assert from_file.name == typed.name and from_file.name.startswith("custom-")
    # The header keeps what the user typed and the file it named (by content), not only the
    # requirements merged out of it.
    assert from_file.asked["typed"] == ["-r", str(requirements), "numpy<2"]
    assert from_file.asked["files"] == [
        {"file": "requirements.txt", "sha256": hashlib.sha256(requirements.read_bytes()).hexdigest()}
    ]
    assert typed.asked["files"] == []
    assert custom_set(["torch==2.4.0"]).name != typed.name
    (tmp_path / "bad.txt").write_text("--index-url https://example.org/simple\n")
    with pytest.raises(LibrarySetError, match="bad.txt:1: .* not a requirement the matrix takes"):
        custom_set(["-r", str(tmp_path / "bad.txt")])
    with pytest.raises(LibrarySetError, match="-r needs a file"):
        custom_set(["-r"])


def test_the_conversion_of_the_store_keeps_every_reader_and_is_idempotent(tmp_path):
    """The committed store (whatever format its files are in) converted: the table and flips
    read the same, a second conversion changes nothing, the check finds nothing unconverted."""
    copy = tmp_path / "matrix"
    shutil.copytree(MATRIX_DIR, copy)
    before = table_text(copy)
    store.convert(copy)
    assert table_text(copy) == before
    snapshot = {p: p.read_bytes() for p in copy.rglob("*.json")}
    assert store.convert(copy) == []
    assert {p: p.read_bytes() for p in copy.rglob("*.json")} == snapshot
    assert not [p for p in store.problems(copy, {}) if p.startswith("not converted")]


def test_a_run_report_in_the_store_is_converted_with_what_it_knew(tmp_path):
    folder = write_report(tmp_path / "old", "REPRODUCED", "5.23.0")
    (folder / ENVIRONMENT_FILE).unlink()
    shutil.copytree(folder, tmp_path / "matrix" / "sets" / "old")
    assert store.problems(tmp_path / "matrix", {}) == [
        "not converted: sets/old/demo.json (python -m shared.harness matrix convert)"
    ]
    assert matrix_main(["convert", "--matrix-dir", str(tmp_path / "matrix")]) == 0
    header = json.loads((tmp_path / "matrix" / "sets" / "old" / "set.json").read_text())
    (environment,) = header["environments"]
    assert environment["complete"] is False and environment["asked"] is None
    assert environment["installed"] == {"torch": "2.13.0", "transformers": "5.23.0"}
    assert store.problems(tmp_path / "matrix", {}) == []


def test_a_declared_cell_missing_from_the_store_fails_the_check(tmp_path, capsys):
    matrix_dir = tmp_path / "matrix"
    collect(matrix_dir, "s", write_report(tmp_path / "runs" / "s", "REPRODUCED", "5.23.0"))
    assert store.problems(matrix_dir, {"s": ("demo",)}) == []
    assert store.problems(matrix_dir, {"s": ("demo", "other")}) == [
        'missing: s declares other, the store has no run of it (nox -s "matrix(s)" -- other)'
    ]


def test_the_committed_store_holds_every_declared_cell_in_its_format(capsys):
    """Each (set, case) pyproject.toml declares has a stored record (python -m shared.harness
    matrix check)."""
    assert declared_cells()["pinned"] == tuple(case_names())
    status = matrix_main(["check"])
    assert status == 0, capsys.readouterr().err


def test_one_case_s_table_on_every_set_that_ran_it(capsys):
    """`matrix table --case CASE`: what a one-case sweep (`nox -t sweep -- CASE`) is read with."""
    assert matrix_main(["table", "--case", "minicpm"]) == 0
    table = capsys.readouterr().out
    headings = [line for line in table.splitlines() if line.startswith("## ")]
    assert headings == ["## minicpm"]
    assert "**pinned**" in table and "**as-of-2025-01-15**" in table
    assert matrix_main(["table", "--case", "no-such-case"]) == 2
    assert "no stored run of 'no-such-case'" in capsys.readouterr().err
