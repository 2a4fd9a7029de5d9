"""The README's two set-up commands work as a newcomer types them, on the machine's Debian Python.

`test_readme_commands_work_in_a_fresh_clone` makes a fresh `git clone` of this repository's HEAD
(committed work only: what CI and a newcomer get; uncommitted edits in this checkout are not
tested here), reads the two commands from that clone's README.md, "Set up and run" section (so
README and test cannot drift apart), and runs each with bash exactly as written, with Debian's
externally-managed `/usr/bin/python3` first on PATH and this test's own environment (virtualenv,
PYTHONPATH, nox and pytest settings) removed. Nothing installed by hand is reused: the clone has
no `.nox/`, so `tools/nox.py` builds its bootstrap environment with Debian's python3 and nox
builds the session environments from the pins. What is reused are the package caches in the
user's home (uv's and pip's), so the packages are not downloaded again.

The clone is made beside uv's cache (`uv cache dir`: `UV_CACHE_DIR`, else `~/.cache/uv`), on its
filesystem, as a user's clone in their home is: uv then hardlinks each session's environment from
the packages the machine already holds (a torch environment costs seconds and no disk), where a
clone under /tmp on another mount (CI's container) would copy gigabytes twice. The test checks
that it did.

One honest departure from "exactly what a newcomer gets": the test command would run the whole
suite again, this test included (recursion, and CI time doubled). The command is run as
written, but with PYTEST_ADDOPTS (pytest's own environment variable, which nox passes through to
`python -m pytest`) naming one cheap test (INNER_TESTS) that needs a package of the `test` group
(hadolint). What is checked is that the command builds the `tests` environment from the pins and
pytest runs and passes in it; the full suite is what the outer run itself is.

`test_without_python3_venv_the_case_command_says_what_to_install` runs the case command on
Debian's python3 as a stock Debian has it, without `python3-venv` (no ensurepip, so no venv can
get pip): as root, in a private mount namespace that hides `ensurepip` from that command only.
The bootstrap installs packages only by name through pip, never from a download of its own, so
there it stops with one line naming the package to install. Where the namespace cannot be made
(not root, no unshare), it skips and `test_no_ensurepip_stubbed` covers the same code path.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

DEBIAN_PYTHON = Path("/usr/bin/python3")
BOOTSTRAP = ROOT / "tools" / "nox.py"
# The inner `nox -s tests`: cheap tests that need a package of the session's group (hadolint).
INNER_TESTS = "tests/test_docker.py"
# What the outer test run leaves in the environment that a newcomer's shell would not have.
FOREIGN_VARIABLES = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX", "UV_PYTHON")


def readme_commands(root: Path = ROOT) -> dict[str, str]:
    """The set-up commands of README.md: {"case": ..., "tests": ...}, each one line as written."""
    text = (root / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set up and run", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README.md's 'Set up and run' section has no ```sh block"
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    commands = {}
    for line in lines:
        if "-s case-minicpm" in line:
            commands["case"] = line
        elif "-s tests" in line:
            commands["tests"] = line
    assert len(lines) == 2 and set(commands) == {"case", "tests"}, lines
    return commands


def shell_words(command: str) -> list[str]:
    """The command without its trailing comment, as words."""
    return shlex.split(command, comments=True)


def uv_cache(env: dict[str, str]) -> Path:
    """The uv cache a newcomer's nox would use (uv is in the tests' environment: `test` group)."""
    found = subprocess.run([str(Path(sys.executable).parent / "uv"), "cache", "dir"], env=env,
                           check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    return Path(found)


@pytest.fixture
def beside_the_uv_cache():
    """A scratch folder on the filesystem of the machine's uv cache, removed afterwards."""
    parent = uv_cache(newcomer_environment()).parent
    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="gallery-fresh-clone-", dir=parent))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def fresh_clone(destination: Path) -> Path:
    """A plain `git clone` of this repository's HEAD: no uncommitted file, no `.nox/`."""
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(destination)], check=True
    )
    return destination


def newcomer_environment() -> dict[str, str]:
    """This process's environment with Debian's python3 first and the test's own settings gone."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in FOREIGN_VARIABLES and not key.startswith(("NOX_", "PYTEST_"))
    }
    ours = {str(Path(sys.executable).parent), str(Path(sys.prefix) / "bin")}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p not in ours]
    env["PATH"] = os.pathsep.join([str(DEBIAN_PYTHON.parent), *path])
    return env


def run_as_written(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=1500
    )


def test_readme_shows_two_one_line_commands_through_the_bootstrap():
    for command in readme_commands().values():
        words = shell_words(command)
        assert words[:2] == ["python3", "tools/nox.py"], command
        assert "--break-system-packages" not in command


def test_ci_runs_the_readme_test_command():
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    expected = shell_words(readme_commands()["tests"])
    assert any(shell_words(line) == expected for line in ci_lines if line.strip()), (
        f".ci/run must run the README's test command: {shlex.join(expected)}"
    )


@pytest.mark.skipif(
    not DEBIAN_PYTHON.exists() and not os.environ.get("CI"),
    reason="no /usr/bin/python3 here (CI has Debian's)",
)
def test_readme_commands_work_in_a_fresh_clone(beside_the_uv_cache):
    assert DEBIAN_PYTHON.exists(), "CI must have Debian's /usr/bin/python3"
    clone = fresh_clone(beside_the_uv_cache / "clone")
    assert not (clone / ".nox").exists()
    env = newcomer_environment()
    commands = readme_commands(clone)  # the clone's own README: what it says is what is run

    case = run_as_written(commands["case"], clone, env)
    output = case.stdout + case.stderr
    assert case.returncode == 0, f"{commands['case']}\n{output[-6000:]}"
    assert "tools/nox.py: setting up nox in .nox/_bootstrap" in output  # built, not reused
    assert "gallery: OK" in output

    # The bootstrap environment stands on Debian's interpreter, not on this test's.
    stamp = (clone / ".nox" / "_bootstrap" / "bootstrap.json").read_text(encoding="utf-8")
    assert f'"base": "{DEBIAN_PYTHON.resolve()}"' in stamp
    # Linked from the machine's cache, as a user's environments are, not copied (nor fetched).
    if os.environ.get("UV_LINK_MODE", "hardlink") == "hardlink":
        torch = next((clone / ".nox" / "case-minicpm").glob("lib/python*/site-packages/torch"))
        assert (torch / "__init__.py").stat().st_nlink > 1, "torch was copied, not hardlinked"

    tests = run_as_written(commands["tests"], clone, {**env, "PYTEST_ADDOPTS": INNER_TESTS})
    output = tests.stdout + tests.stderr
    assert tests.returncode == 0, f"{commands['tests']}\n{output[-6000:]}"
    assert re.search(r"\b\d+ passed\b", output) and " failed" not in output, output[-3000:]


def debian_python_without_ensurepip(tmp_path: Path) -> str | None:
    """A bash prefix under which Debian's python3 is as without `python3-venv`, else None.

    A stock Debian or Ubuntu lacks that package (ensurepip), and a plain `python3 -m venv`
    fails there. Removing it from this machine is not the test's to do: in a private mount
    namespace (`unshare -m`, root only), a copy of the standard library without `ensurepip/`
    is bound over the real one, for this command only.
    """
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        return None
    stdlib = subprocess.run(
        [str(DEBIAN_PYTHON), "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    copy = tmp_path / "stdlib-without-ensurepip"
    shutil.copytree(stdlib, copy, symlinks=True, ignore=shutil.ignore_patterns("ensurepip"))
    return f"mount --bind {shlex.quote(str(copy))} {shlex.quote(stdlib)} && "


def assert_names_python3_venv(run: subprocess.CompletedProcess) -> None:
    assert run.returncode == 2, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "has no ensurepip" in lines[0] and "apt-get install python3-venv" in lines[0]


@pytest.mark.skipif(not DEBIAN_PYTHON.exists(), reason="no /usr/bin/python3 here")
def test_without_python3_venv_the_case_command_says_what_to_install(tmp_path):
    """The README's case command, as written, where Debian's python3 has no python3-venv."""
    prefix = debian_python_without_ensurepip(tmp_path)
    if prefix is None:
        pytest.skip("needs root and unshare to hide python3-venv; the stubbed test covers it")
    clone = fresh_clone(tmp_path / "clone")
    command = readme_commands(clone)["case"]
    script = (
        prefix + "! python3 -c 'import ensurepip' 2>/dev/null && "
        "! python3 -m venv .venv-plain >/dev/null 2>&1 && " + command
    )
    run = subprocess.run(
        ["unshare", "-m", "bash", "-c", script], cwd=clone, env=newcomer_environment(),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert_names_python3_venv(run)


def test_no_ensurepip_stubbed(tmp_path):
    """Without ensurepip the bootstrap says, in one line, which package gives it (no root)."""
    (tmp_path / "tools").mkdir()
    shutil.copy2(BOOTSTRAP, tmp_path / "tools" / "nox.py")
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    stub = (
        "import runpy, sys; sys.modules['ensurepip'] = None; "
        "sys.argv = ['tools/nox.py', '--version']; runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    python = str(DEBIAN_PYTHON if DEBIAN_PYTHON.exists() else sys.executable)
    run = subprocess.run(
        [python, "-c", stub], cwd=tmp_path, env=newcomer_environment(),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert_names_python3_venv(run)
    assert not (tmp_path / ".nox" / "_bootstrap").exists()


def older_pythons() -> list[Path]:
    """Interpreters on this machine older than 3.11 (pyenv's, or pythonX.Y on PATH)."""
    found = set(Path.home().glob(".pyenv/versions/*/bin/python"))
    for minor in range(6, 11):
        exe = shutil.which(f"python3.{minor}")
        if exe:
            found.add(Path(exe))
    for name in ("python2", "python2.7"):
        exe = shutil.which(name)
        if exe:
            found.add(Path(exe))
    older = []
    for exe in sorted(found):
        version = subprocess.run(
            [str(exe), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        if version and tuple(map(int, version.split("."))) < (3, 11):
            older.append(exe)
    return older


def assert_one_line_naming_the_version(run: subprocess.CompletedProcess) -> None:
    assert run.returncode == 2, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "needs Python 3.11 or newer" in lines[0] and "requires-python >=3.11" in lines[0]
    assert "Traceback" not in run.stderr


def test_older_python_gets_one_line_stubbed(tmp_path):
    """The check itself, with this interpreter claiming to be 3.9 (no old Python needed)."""
    stub = (
        "import runpy, sys; sys.version_info = (3, 9, 2, 'final', 0); "
        f"sys.argv = [{str(BOOTSTRAP)!r}, '-l']; runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    run = subprocess.run([sys.executable, "-c", stub], capture_output=True, text=True)
    assert_one_line_naming_the_version(run)
    assert "is Python 3.9.2" in run.stderr
    assert not (tmp_path / ".nox").exists()


def test_older_python_gets_one_line_for_real():
    """Every older interpreter found here (pyenv keeps 2.7 to 3.10) gets the line, not a crash."""
    pythons = older_pythons()
    if not pythons:
        pytest.skip("no Python older than 3.11 on this machine; the stubbed test covers the check")
    for exe in pythons:
        run = subprocess.run(
            [str(exe), str(BOOTSTRAP), "-s", "tests"], capture_output=True, text=True, cwd=ROOT
        )
        assert_one_line_naming_the_version(run)
