"""The matrix and the bisection against a local index of tiny packages (tests/local_index.py):
set resolution, ``--as-of``, an environment holding exactly one set after another, a library
that cannot be imported stopping the set, the store's header and rows, the flip table, and the
bisection's search over releases it installs. No torch is installed: real library stacks stay
in ``nox -s matrix`` and the matrix workflow."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from local_index import serve
from packaging.version import Version

from shared.harness import bisect
from shared.harness.cli import main
from shared.harness.environment import (
    _IMPORT_EACH,
    ImportFailure,
    import_failures,
    install_commands,
    installed_packages,
)
from shared.harness.library_sets import LibrarySet, custom_set
from shared.harness.matrix import table_text
from shared.harness.report import CaseReport, Verdict

UV = str(Path(sys.executable).parent / "uv")
PACKAGING = installed_packages()["packaging"]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    served = serve(tmp_path_factory.mktemp("wheels"))
    yield served
    served.server.shutdown()


@pytest.fixture
def uv_index(index, tmp_path, monkeypatch):
    """uv (and the bisection's listing) see the local index only, with a cache of the test's."""
    for name, value in index.environment(tmp_path / "uv-cache").items():
        monkeypatch.setenv(name, value)


def new_environment(path: Path) -> str:
    subprocess.run([UV, "venv", "-q", "-p", sys.executable, str(path)], check=True)
    return str(path / "bin" / "python")


def install(chosen: LibrarySet, python: str, scratch: Path) -> dict[str, str]:
    """What the matrix session runs for a set; returns what the environment then holds."""
    for command in install_commands(chosen, python, UV, scratch):
        subprocess.run(command, check=True, capture_output=True, text=True)
    return {name.lower(): version for name, version in installed_packages(python).items()}


def test_an_environment_holds_exactly_the_last_set_installed(uv_index, tmp_path):
    python = new_environment(tmp_path / "env")
    first = LibrarySet("first", ("beta", "packaging"), ())
    assert install(first, python, tmp_path / "1") == {
        "alpha": "2.0", "beta": "1.0", "packaging": PACKAGING, "setuptools": "60.0"}  # fmt: skip
    # Another set in the same environment: beta (and nothing else of the first) is gone.
    second = LibrarySet("second", ("alpha==1.0", "packaging"), ())
    assert install(second, python, tmp_path / "2") == {
        "alpha": "1.0", "packaging": PACKAGING, "setuptools": "60.0"}  # fmt: skip
    # A dated set: nothing uploaded after the date (alpha 2.0 came on 2024-06-01).
    dated = LibrarySet("as-of-2024-04-01", ("beta", "packaging"), (),
                       as_of=datetime.date(2024, 4, 1))  # fmt: skip
    assert install(dated, python, tmp_path / "3")["alpha"] == "1.1"
    assert dated.asked == {"requirements": ["beta", "packaging"],
                           "options": ["--exclude-newer", "2024-04-01"],
                           "added_by_rule": ["setuptools"]}  # fmt: skip
    # A set that names setuptools itself gets no second one.
    own = LibrarySet("own", ("alpha", "setuptools==60.0"), ())
    assert own.to_resolve == own.requirements


def test_a_lock_file_is_installed_as_it_is_under_a_name_of_its_content(uv_index, tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text(f"alpha==1.1\nbeta==1.0\npackaging=={PACKAGING}\n", encoding="utf-8")
    chosen = custom_set(["--lock", str(lock)])
    python = new_environment(tmp_path / "env")
    install(LibrarySet("before", ("alpha==1.0", "packaging"), ()), python, tmp_path / "0")
    assert install(chosen, python, tmp_path / "1") == {
        "alpha": "1.1", "beta": "1.0", "packaging": PACKAGING, "setuptools": "60.0"}  # fmt: skip
    assert chosen.name.startswith("custom-") and chosen.asked["lock"]["file"] == lock.name
    lock.write_text("alpha==1.0\n", encoding="utf-8")
    assert custom_set(["--lock", str(lock)]).name != chosen.name


def environment_command(python: str, report_dir: Path, chosen: LibrarySet):
    return subprocess.run(
        [python, "-m", "shared.harness", "matrix", "environment", str(report_dir),
         "--set", chosen.name, "--asked", json.dumps(chosen.asked)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip


def test_a_library_that_cannot_be_imported_stops_the_set_naming_it(uv_index, tmp_path):
    """peft 0.11.1 imports setuptools without declaring it: with the rule the set imports; an
    environment without setuptools stops with exit 2 naming the set, the library, the module."""
    python = new_environment(tmp_path / "env")
    chosen = LibrarySet("peft-old", ("peft==0.11.1", "packaging"), ())
    install(chosen, python, tmp_path / "s")
    run = environment_command(python, tmp_path / "ok", chosen)
    assert run.returncode == 0, run.stderr
    recorded = json.loads((tmp_path / "ok" / "environment.json").read_text())
    assert recorded["installed"] == {"packaging": PACKAGING, "peft": "0.11.1",
                                     "setuptools": "60.0"}  # fmt: skip
    assert recorded["asked"]["added_by_rule"] == ["setuptools"] and recorded["python"]

    subprocess.run([UV, "pip", "uninstall", "-q", "--python", python, "setuptools"], check=True)
    run = environment_command(python, tmp_path / "broken", chosen)
    assert run.returncode == 2
    assert (
        "matrix: error: peft-old: peft 0.11.1 cannot be imported: no module named 'setuptools' "
        "(ModuleNotFoundError: No module named 'setuptools'); an environment error, not a verdict"
    ) in run.stderr
    assert "add the package that provides 'setuptools' to the set" in run.stderr
    assert import_failures(python) == [
        ImportFailure(
            "peft", "0.11.1", "ModuleNotFoundError: No module named 'setuptools'", "setuptools"
        )
    ]


def test_a_library_a_variant_declares_that_cannot_be_imported_stops_the_set(uv_index, tmp_path):
    """torch-optimi by its import name (optimi): its declared floor resolves an alpha that lacks
    the name it imports; exit 2 naming the library and that name, not a missing module."""
    python = new_environment(tmp_path / "env")
    chosen = LibrarySet("optimi-old-alpha", ("torch-optimi", "alpha==1.1", "packaging"), ())
    install(chosen, python, tmp_path / "s")
    run = environment_command(python, tmp_path / "broken", chosen)
    assert run.returncode == 2
    assert (
        "matrix: error: optimi-old-alpha: torch-optimi 0.3.3 cannot be imported: ImportError: "
        "cannot import name 'NEW_IN_2' from 'alpha'"
    ) in run.stderr
    (failure,) = import_failures(python)
    assert (failure.package, failure.missing_module) == ("torch-optimi", None)

    install(LibrarySet("optimi-new-alpha", ("torch-optimi", "packaging"), ()), python,
            tmp_path / "t")  # fmt: skip
    assert import_failures(python) == []


CASE, VARIANT = "lora-fp16-gradscaler", "peft_default"  # a real one: the bisection loads it


def report_from(python: str) -> CaseReport:
    """What a run of the variant reports in a tiny environment: REPRODUCED before peft 0.12."""
    peft = subprocess.run([python, "-c", "import peft; print(peft.VERSION)"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    kind = "REPRODUCED" if Version(peft) < Version("0.12.0") else "PASSED"
    return CaseReport(
        case=CASE, title="Demo", finished="2026-11-22T12:00:00+00:00", python="3.11",
        versions={"torch": None, "peft": peft}, cuda_devices=[],
        variants=[Verdict(kind=kind, detail="clean", variant=VARIANT, device="cpu",
                          note="a note of case.toml", output_tail="printed\n" * 50)],
    )  # fmt: skip


def test_two_sets_stored_and_read_as_a_flip_then_bisected(uv_index, tmp_path, monkeypatch, capsys):
    """Two tiny sets run, recorded and collected: the store holds each set's header (every
    package installed) and rows without notes or output; the flip is read off them; the
    bisection installs releases from the index and gives the flip its first release."""
    matrix_dir = tmp_path / "matrix"
    python = new_environment(tmp_path / "env")
    for name, peft in (("tiny-old", "0.10.0"), ("tiny-new", "0.13.0")):
        chosen = LibrarySet(name, (f"peft=={peft}", "packaging"), (CASE,))
        install(chosen, python, tmp_path / name)
        report_dir = tmp_path / "runs" / name
        assert environment_command(python, report_dir, chosen).returncode == 0
        report_from(python).write(report_dir)
        assert main(["matrix", "collect", name, str(report_dir), "--matrix-dir", str(matrix_dir),
                     "--table", str(tmp_path / "table.md")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out.rstrip().endswith("matrix: tiny-new: 1 as documented, 0 skipped, 0 changed")
    assert f"  {CASE}/{VARIANT}: PASSED (cpu): clean" in out
    header = json.loads((matrix_dir / "sets" / "tiny-new" / "set.json").read_text())
    (environment,) = header["environments"]
    assert environment["installed"] == {"packaging": PACKAGING, "peft": "0.13.0",
                                        "setuptools": "60.0"}  # fmt: skip
    assert environment["asked"]["requirements"] == ["peft==0.13.0", "packaging"]
    record = json.loads((matrix_dir / "sets" / "tiny-new" / f"{CASE}.json").read_text())
    assert record["environment"] == environment["id"]
    assert "note" not in record["variants"][0] and "output_tail" not in record["variants"][0]
    flip = (f"- {VARIANT}: REPRODUCED on peft <= 0.10.0, PASSED from peft 0.13.0 [not bisected] "
            "(measured on tiny-old, tiny-new)")  # fmt: skip
    assert flip in (tmp_path / "table.md").read_text() and flip in table_text(matrix_dir)

    # The bisection, in the same environment: releases listed by the index, each installed.
    base = LibrarySet("tiny", ("peft", "packaging"), (CASE,))
    monkeypatch.setattr(bisect, "library_set", lambda name: base)
    monkeypatch.setattr(bisect._Bisector, "_run", lambda self: report_from(self.python))
    monkeypatch.setenv(bisect.UV_VARIABLE, UV)
    argv = [
        "bisect",
        f"{CASE}/{VARIANT}",
        "peft",
        "--python",
        python,
        "--matrix-dir",
        str(matrix_dir),
    ]  # bounds: the stored flip's unbisected cut
    assert main(argv) == 0
    (path,) = (matrix_dir / "bisections").glob("*.json")
    stored = json.loads(path.read_text())
    assert stored["releases"] == ["0.10.0", "0.11.0", "0.11.1", "0.12.0", "0.13.0"]
    assert (stored["last_before"], stored["first_changed"]) == ("0.11.1", "0.12.0")
    assert stored["installs"] == len(stored["probes"]) <= 2 + 2
    assert stored["environment"]["installed"]["setuptools"] == "60.0"
    assert "PASSED from peft 0.13.0 [first release: 0.12.0, after 0.11.1; bisected over tiny]" in (
        table_text(matrix_dir)
    )


def test_the_matrix_session_stops_before_any_run_on_a_library_that_cannot_be_imported(
    index, tmp_path
):
    """nox's matrix session, for real, on a lock of tiny packages: installed from the local
    index, then stopped by the import check (exit 2 from the harness), before the gallery runs."""
    lock = tmp_path / "pylock.txt"
    lock.write_text(f"accelerate==0.1.0\npackaging=={PACKAGING}\n", encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "nox", "-s", "matrix(custom)", "--envdir", str(tmp_path / "nox"),
         "--", "--lock", str(lock)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, **index.environment(tmp_path / "uv-cache"),
             "GALLERY_MATRIX_DIR": str(tmp_path / "matrix"),
             "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])},
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    name = custom_set(["--lock", str(lock)]).name
    assert (
        f"matrix: error: {name}: accelerate 0.1.0 cannot be imported: no module named 'triton'"
    ) in output
    assert "shared.harness run" not in output and not (tmp_path / "matrix").exists()


WRAPPING_MODULE = '''
try:
    import no_such_module_here
except ImportError as inner:
    raise RuntimeError(
        "Failed to import wrapper.models because of the following error (look up to see its "
        "traceback):\\nNo module named 'no_such_module_here'"
    ) from inner
'''


def test_an_import_failure_names_the_error_it_wraps(tmp_path):
    """diffusers wraps an import error in a RuntimeError whose first line says only "look up to
    see its traceback": the line names the wrapped error and its missing module, told the same
    way in this process and in the child that imports for another interpreter."""
    (tmp_path / "wrapper.py").write_text(WRAPPING_MODULE)
    told = ("RuntimeError: Failed to import wrapper.models because of the following error (look "
            "up to see its traceback): (from ModuleNotFoundError: No module named "
            "'no_such_module_here')")  # fmt: skip
    child = subprocess.run([sys.executable, "-c", _IMPORT_EACH, "wrapper"], cwd=tmp_path,
                           capture_output=True, text=True)  # fmt: skip
    assert json.loads(child.stdout.strip().splitlines()[-1]) == {
        "wrapper": [told, "no_such_module_here"]}
    sys.path.insert(0, str(tmp_path))
    try:
        import wrapper  # noqa: F401
    except RuntimeError as exc:
        failure = ImportFailure.of("wrapper", "1.0", exc)
    finally:
        sys.path.remove(str(tmp_path))
    assert (failure.error, failure.missing_module) == (told, "no_such_module_here")
