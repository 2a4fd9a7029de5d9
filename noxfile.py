"""Sessions of the gallery. `nox -l` lists them.

- `case-<name>`: one per folder under cases/ (tag `cases`; `nox -t cases` runs the gallery).
- `cases`: every case in one run (shares the library imports: the fastest full run).
- `tests`: the test suite.
- `gallery`: run every case and build the static site (`nox -s gallery -- --check` also loads
  every page in headless Chromium).
- `matrix`: every case against several library sets (pinned, latest, upstream eras, or a set
  named on the command line); writes reports/matrix/ (not run by default).
- `benchmark`: time the gallery against a bare import of its libraries (not run by default).

Pins live in pyproject.toml's dependency groups. With `--no-venv` nothing is installed: the
current environment must already hold the packages (offline GPU boxes, containers).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).parent))  # the catalog is the one list of cases
from shared.harness.catalog import case_names  # noqa: E402

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["cases", "tests"]

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")


def install_group(session: nox.Session, group: str) -> None:
    """Install a dependency group, or say clearly that --no-venv installs nothing."""
    if session.venv_backend == "none":
        session.log(
            f"no virtualenv (--no-venv): installing nothing; this environment must already "
            f"hold the '{group}' group of pyproject.toml"
        )
        return
    session.install(*nox.project.dependency_groups(PYPROJECT, group))


def run_gallery(session: nox.Session, *case_names: str) -> None:
    install_group(session, "cases")
    session.run("python", "-m", "shared.harness", "run", *case_names, *session.posargs)


def _register_case_session(name: str) -> None:
    def case_session(session: nox.Session) -> None:
        run_gallery(session, name)

    case_session.__doc__ = f"Run the {name} case: broken must fail as documented, fixed must pass."
    nox.session(name=f"case-{name}", tags=["cases"])(case_session)


for _name in case_names():
    _register_case_session(_name)


@nox.session
def cases(session: nox.Session) -> None:
    """Run every case in one gallery run."""
    run_gallery(session, "--all")


@nox.session(default=False)
def gallery(session: nox.Session) -> None:
    """Run every case, build the static site (.gallery/site); `-- --check` checks it in Chromium."""
    install_group(session, "cases")
    install_group(session, "site")
    session.run("python", "-m", "shared.harness", "run", "--all")
    session.run("python", "-m", "shared.harness", "site", "build", *session.posargs)


MATRIX_SETS = PYPROJECT["tool"]["gallery"]["matrix"]
LIBRARY_SETS = ["pinned", *MATRIX_SETS, "custom"]


@nox.session(default=False)
@nox.parametrize("library_set", LIBRARY_SETS, ids=LIBRARY_SETS)
def matrix(session: nox.Session, library_set: str) -> None:
    """Run the cases against one library set; add its column to reports/matrix/."""
    pinned = nox.project.dependency_groups(PYPROJECT, "cases")
    if library_set == "pinned":
        packages, cases = pinned, ["--all"]
    elif library_set == "custom":
        if not session.posargs:
            session.skip(
                "name a set to run it: nox -s matrix -- torch==2.16.0 transformers==5.30.0"
            )
        packages, cases = _override_pins(pinned, session.posargs), ["--all"]
    else:
        packages = MATRIX_SETS[library_set]["packages"]
        named = MATRIX_SETS[library_set]["cases"]
        cases = ["--all"] if named == "all" else named
    if session.venv_backend == "none":
        session.error("the matrix builds one environment per library set: run it without --no-venv")
    session.install(*packages)
    report_dir = ROOT / ".gallery" / "matrix" / library_set
    shutil.rmtree(report_dir, ignore_errors=True)
    # Exit 1 (anomalies) still leaves every report: collect them, then `collect` fails the
    # session. Any other failure (bad input 2, internal error 3) stops the session here.
    session.run(
        "python", "-m", "shared.harness", "run", *cases, "--report-dir", str(report_dir),
        success_codes=[0, 1],
    )  # fmt: skip
    ran = case_names() if cases == ["--all"] else cases
    session.run(
        "python", "-m", "shared.harness", "matrix", "collect", library_set, str(report_dir),
        "--cases", *ran,
    )  # fmt: skip


def _override_pins(pinned: tuple[str, ...], requested: list[str]) -> list[str]:
    """The pinned set with the packages the user named replaced by the user's requirements."""
    from packaging.requirements import Requirement

    named = {Requirement(spec).name.lower() for spec in requested}
    return [p for p in pinned if Requirement(p).name.lower() not in named] + list(requested)


@nox.session(default=False)
def benchmark(session: nox.Session) -> None:
    """Time the gallery against the floor of one bare import; print ratios and targets."""
    install_group(session, "nox")
    session.run("python", "-m", "shared.harness", "benchmark", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (harness verdicts, metadata validation, every case)."""
    install_group(session, "test")
    session.run("python", "-m", "pytest", *session.posargs)
