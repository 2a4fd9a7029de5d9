"""The Dockerfile lints clean and its base image matches the torch pin."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT

DOCKERFILE = ROOT / "docker" / "Dockerfile"


def test_dockerfile_lints_clean():
    hadolint = Path(sys.executable).parent / "hadolint"
    run = subprocess.run([str(hadolint), str(DOCKERFILE)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_base_image_torch_matches_the_pin():
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]["cases"]
    torch_pin = next(p for p in pins if isinstance(p, str) and p.startswith("torch=="))
    base = re.search(r"ARG BASE_IMAGE=pytorch/pytorch:([\d.]+)-cuda", DOCKERFILE.read_text())
    assert base, "BASE_IMAGE must be an official pytorch/pytorch image pinned by tag"
    assert torch_pin == f"torch=={base.group(1)}"
