"""Sessions of the gallery. `nox -l` lists them.

- `case-<name>`: one per folder under cases/ (tag `cases`; `nox -t cases` runs the gallery).
- `cases`: every case in one run (shares the library imports: the fastest full run).
- `tests`: the test suite.
- `gallery`: run every case and build the static site (`nox -s gallery -- --check` also loads
  every page in headless Chromium).
- `matrix`: every case against several library sets (pinned, latest, upstream eras, the dated
  sweep `as-of-DATE`, or a set named on the command line: `-- torch==X ...`, `-- -r
  requirements.txt`, `-- --lock pylock.toml` or `-- --as-of 2024-06-30`); stores its records in
  reports/matrix/sets/ (not run by default). A named set given case names
  (`nox -s "matrix(as-of-2024-07-15)" -- minicpm`) runs only those; one case over the whole
  dated sweep: `nox -t sweep -- minicpm` (sets before its era skip), then
  `python -m shared.harness matrix table --case minicpm`.
- `bisect`: the first release of a library where a variant's verdict changes (not by default).
- `explain`: which documented case an error message, a traceback or a symptom is.
- `diagnose`: run your own script under the gallery's watchers (`-- SCRIPT [ARGS...]`).
- `benchmark`: time each case session against its own floor, a bare import of the libraries it
  imports plus its variants' compute (not run by default; `-- --cases minicpm`: those only).

Pins live in pyproject.toml's dependency groups. With `--no-venv` nothing is installed: the
current environment must already hold the packages (offline GPU boxes, containers).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).parent))  # the catalog is the one list of cases
from shared.harness.catalog import case_names  # noqa: E402
from shared.harness.environment import install_commands  # noqa: E402
from shared.harness.library_sets import (  # noqa: E402
    CUSTOM,
    LibrarySet,
    LibrarySetError,
    custom_set,
    named_sets,
    names_a_set,
)
from shared.harness.library_sets import library_set as named_set  # noqa: E402

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["cases", "tests"]

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
UV = nox.virtualenv.find_uv()[1]  # dated sets resolve with uv's --exclude-newer


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
    # --no-venv: the environment is the user's and must hold the pinned set; a package a variant
    # declares and it lacks is then an environment error (exit 2), not a skip.
    complete = ["--complete-env"] if session.venv_backend == "none" else []
    session.run("python", "-m", "shared.harness", "run", *case_names, *complete, *session.posargs)


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
    install_group(session, "explain")  # the search box's index (catalog_index)
    session.run("python", "-m", "shared.harness", "run", "--all")
    session.run("python", "-m", "shared.harness", "site", "build", *session.posargs)


LIBRARY_SETS = [*named_sets(), CUSTOM]
# `nox -t sweep` selects the dated sets (`-k as-of` is no Python expression: `as` is a keyword).
SWEEP_TAG = "sweep"


@nox.session(default=False)
@nox.parametrize(
    "library_set",
    [nox.param(name, id=name, tags=[SWEEP_TAG] if name.startswith("as-of-") else [])
     for name in LIBRARY_SETS],
)  # fmt: skip
def matrix(session: nox.Session, library_set: str) -> None:
    """Run the cases against one library set; store its records in reports/matrix/sets/."""
    if session.venv_backend == "none":
        session.error("the matrix builds one environment per library set: run it without --no-venv")
    try:
        chosen = custom_set(session.posargs) if library_set == CUSTOM else named_set(library_set)
    except LibrarySetError as exc:
        if library_set == CUSTOM and not session.posargs:
            session.skip(str(exc))
        session.error(str(exc))
    if library_set != CUSTOM and names_a_set(session.posargs):
        session.skip("the set named after -- runs as matrix(custom)")
    if session.python:  # `nox --force-python 3.12`: its records beside the default Python's
        chosen = dataclasses.replace(chosen, name=f"{chosen.name}-py{session.python}")
    if library_set != CUSTOM and session.posargs:  # some of the set's cases only
        unknown = sorted(set(session.posargs) - set(case_names()))
        if unknown:
            session.error(f"no case named {unknown}; the cases: {case_names()}")
        wanted = tuple(name for name in session.posargs if name in chosen.cases)
        if not wanted:  # sweeping some cases over every set (`nox -t sweep -- CASE`)
            session.skip(f"{library_set} runs none of {list(session.posargs)} (before their "
                         "era_start, or not one of its cases)")  # fmt: skip
        outside = sorted(set(session.posargs) - set(wanted))
        if outside:
            session.log(f"{library_set} does not run {outside}: running {list(wanted)}")
        chosen = dataclasses.replace(chosen, cases=wanted)
    install_set(session, chosen)
    report_dir = ROOT / ".gallery" / "matrix" / chosen.name
    shutil.rmtree(report_dir, ignore_errors=True)
    # A library that cannot be imported stops the session here (exit 2), naming it: no verdicts.
    session.run(
        "python", "-m", "shared.harness", "matrix", "environment", str(report_dir),
        "--set", chosen.name, "--asked", json.dumps(chosen.asked),
    )  # fmt: skip
    # The run's output (the libraries' import noise first) goes to a log; `collect` ends the
    # session with the set's verdicts and its changes. Exit 1 (anomalies) still leaves every
    # report: `collect` then fails the session. Any other failure (bad input 2, internal error
    # 3) stops it here, with the output shown.
    log = report_dir / "run.log"
    session.log(f"running {len(chosen.cases)} case(s) on {chosen.name}; output: {log}")
    output = session.run(
        "python", "-m", "shared.harness", "run", *chosen.cases, "--report-dir", str(report_dir),
        success_codes=[0, 1], silent=True,
    )  # fmt: skip
    log.write_text(output or "", encoding="utf-8")
    session.run(
        "python", "-m", "shared.harness", "matrix", "collect", chosen.name, str(report_dir),
        "--cases", *chosen.cases,
    )  # fmt: skip


def install_set(session: nox.Session, chosen: LibrarySet) -> None:
    """Make the session's environment hold exactly ``chosen``: resolved to exact pins and
    synced (what an earlier set left is removed), or a lock file synced to as it is."""
    if session.venv_backend != "uv":
        session.error("a library set is resolved and synced with uv: install uv for nox")
    scratch = Path(session.create_tmp())
    for command in install_commands(chosen, f"{session.bin}/python", UV, scratch):
        session.run(*command, external=True)


@nox.session(default=False)
def bisect(session: nox.Session) -> None:
    """Find the first release where a variant's verdict changes:
    nox -s bisect -- CASE/VARIANT PACKAGE [GOOD BAD] [--base SET | --as-of DATE]."""
    if session.venv_backend == "none":
        session.error("a bisection reinstalls its environment: run it without --no-venv")
    if not session.posargs:
        session.error("usage: nox -s bisect -- rope-bf16/broken transformers 4.37.2 4.39.3")
    session.install("uv", *nox.project.dependency_groups(PYPROJECT, "cases"))
    session.run("python", "-m", "shared.harness", "bisect", *session.posargs,
                env={"GALLERY_UV": UV})  # fmt: skip


@nox.session(default=False)
def explain(session: nox.Session) -> None:
    """Which documented case an error, a traceback or a symptom is: nox -s explain -- "TEXT"."""
    if not session.posargs:
        session.error('usage: nox -s explain -- "RuntimeError: ..." (or -- --file traceback.txt)')
    install_group(session, "explain")  # the catalog, the matrix store, retrieval: no torch
    session.run("python", "-m", "shared.harness", "explain", *session.posargs)


@nox.session(default=False)
def diagnose(session: nox.Session) -> None:
    """Run your own script under the gallery's watchers: the module, the cause, the case and
    its fix: nox -s diagnose -- SCRIPT [ARGS...] (--no-venv: in your own environment)."""
    if not session.posargs:
        session.error("usage: nox -s diagnose -- [--backward] [--json FILE] SCRIPT [ARGS...]")
    install_group(session, "cases")
    session.chdir(session.invoked_from)  # the script's paths are the user's, from where they are
    session.run("python", "-m", "gallery_diagnose", *session.posargs,
                env={"PYTHONPATH": str(ROOT)})  # fmt: skip


@nox.session(default=False)
def benchmark(session: nox.Session) -> None:
    """Time each case session against its own floor (its imports, its compute); print ratios."""
    install_group(session, "nox")
    session.run("python", "-m", "shared.harness", "benchmark", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (harness verdicts, metadata validation, every case: the gallery runs
    once for the whole suite); the 25 slowest tests are listed at the end, so CI's cost shows."""
    install_group(session, "test")
    session.run("python", "-m", "pytest", "--durations=25", *session.posargs)
