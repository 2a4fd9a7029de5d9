"""Sessions of the gallery. `nox -l` lists them.

- `case-<name>`: one per folder under cases/ (tag `cases`; `nox -t cases` runs the gallery).
- `cases`: every case in one run (shares the library imports: the fastest full run).
- `tests`: the test suite.
- `benchmark`: time the gallery against a bare import of its libraries (not run by default).

Pins live in pyproject.toml's dependency groups. With `--no-venv` nothing is installed: the
current environment must already hold the packages (offline GPU boxes, containers).
"""

from __future__ import annotations

from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["cases", "tests"]

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
CASE_NAMES = sorted(
    path.name
    for path in (ROOT / "cases").iterdir()
    if path.is_dir() and not path.name.startswith(("_", "."))
)


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
    session.run("python", "-m", "shared.gallery", "run", *case_names, *session.posargs)


def _register_case_session(name: str) -> None:
    def case_session(session: nox.Session) -> None:
        run_gallery(session, name)

    case_session.__doc__ = f"Run the {name} case: broken must fail as documented, fixed must pass."
    nox.session(name=f"case-{name}", tags=["cases"])(case_session)


for _name in CASE_NAMES:
    _register_case_session(_name)


@nox.session
def cases(session: nox.Session) -> None:
    """Run every case in one gallery run."""
    run_gallery(session, "--all")


@nox.session(default=False)
def benchmark(session: nox.Session) -> None:
    """Time the gallery against the floor of one bare import; print ratios and targets."""
    install_group(session, "nox")
    session.run("python", "-m", "shared.benchmark", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (harness verdicts, metadata validation, every case)."""
    install_group(session, "test")
    session.run("python", "-m", "pytest", *session.posargs)
