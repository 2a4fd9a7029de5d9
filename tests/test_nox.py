"""The nox layer: sessions generated from cases/, --no-venv in an environment that has it all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

from shared.harness.catalog import case_names
from shared.harness.library_sets import named_sets


def nox(*args: str) -> subprocess.CompletedProcess:
    # `python` inside a --no-venv session must be this interpreter, the one with the packages.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "nox", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        timeout=600,
    )


def test_every_case_folder_is_a_tagged_session():
    listing = nox("-l", "-t", "cases")
    assert listing.returncode == 0, listing.stderr
    for name in case_names():
        assert f"case-{name} [cases]" in listing.stdout


def test_no_venv_runs_a_case_in_this_environment():
    run = nox("--no-venv", "-s", "case-minicpm")
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "no virtualenv (--no-venv): installing nothing" in output
    assert "REPRODUCED     broken " in output
    assert "gallery: OK" in output


def test_unknown_session_fails():
    run = nox("--no-venv", "-s", "case-no-such-case")
    assert run.returncode != 0
    assert "case-no-such-case" in run.stdout + run.stderr


def test_missing_packages_are_a_clear_error():
    # -S: no site-packages, as in an environment without the pinned set.
    run = subprocess.run(
        [sys.executable, "-S", "-m", "shared.harness", "run", "minicpm"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 2
    assert "is not installed for" in run.stderr
    assert "pip install --no-index --find-links" in run.stderr


def test_one_case_swept_over_dated_sets_skips_those_before_its_era(tmp_path):
    """`nox -t sweep -- CASE` sweeps one case: a dated set that does not run it is skipped,
    saying why, before anything is installed; an unknown case name is an error."""
    envdir = str(tmp_path / "envs")
    early = nox("--envdir", envdir, "-s", "matrix(as-of-2024-01-15)", "--", "gemma3-fp16-overflow")
    output = early.stdout + early.stderr
    assert early.returncode == 0, output
    assert "as-of-2024-01-15 runs none of ['gemma3-fp16-overflow']" in output
    assert "Session matrix(as-of-2024-01-15) skipped" in output
    unknown = nox("--envdir", envdir, "-s", "matrix(as-of-2024-01-15)", "--", "no-such-case")
    assert unknown.returncode != 0
    assert "no case named ['no-such-case']" in unknown.stdout + unknown.stderr


def test_a_set_named_after_the_dashes_runs_only_as_the_custom_set(tmp_path):
    """`nox -s matrix -- torch==X` selects every matrix session: the named sets skip, saying
    where the set runs, instead of failing on a requirement taken for a case's name."""
    envdir = str(tmp_path / "envs")
    for arguments in (["torch==2.4.1"], ["--as-of", "2024-06-30"], ["-r", "requirements.txt"]):
        named = nox("--envdir", envdir, "-s", "matrix(pinned)", "--", *arguments)
        output = named.stdout + named.stderr
        assert named.returncode == 0, output
        assert "the set named after -- runs as matrix(custom)" in output
        assert "Session matrix(pinned) skipped" in output


def test_the_sweep_tag_selects_every_dated_set_and_nothing_else():
    """The documented one-case sweep is `nox -t sweep -- CASE` (`-k as-of` is no expression)."""
    listed = nox("--list", "--json", "-t", "sweep")
    assert listed.returncode == 0, listed.stderr
    chosen = {session["session"] for session in json.loads(listed.stdout)}
    dated = {f"matrix({name})" for name in named_sets() if name.startswith("as-of-")}
    assert len(dated) >= 10 and chosen == dated, chosen ^ dated
