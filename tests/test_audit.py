"""The model audit on your own model: `python -m shared.culprit MODULE:FACTORY`."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

from shared.hazards import HAZARDS

FACTORIES = """
import torch
from torch import nn


class ListHeldTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.projector = nn.Linear(4, 4)
        self.vision_tower = [nn.Conv2d(3, 4, 2)]  # a plain list: .to() never reaches it


def hazardous():
    return ListHeldTower().to(torch.float16)


def clean():
    return nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 2)).to(torch.bfloat16)


def not_a_model():
    return 42
"""


def audit(tmp_path, factory: str) -> subprocess.CompletedProcess:
    (tmp_path / "my_models.py").write_text(FACTORIES, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "shared.culprit", f"my_models:{factory}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
    )  # fmt: skip


def test_a_hazard_in_your_model_is_named_with_the_case_that_shows_it(tmp_path):
    run = audit(tmp_path, "hazardous")
    assert run.returncode == 1, run.stderr
    assert "unreachable-submodule at vision_tower: list of modules" in run.stdout
    assert "(see cases/omnilmm)" in run.stdout


def test_a_clean_model_says_so_and_exits_0(tmp_path):
    run = audit(tmp_path, "clean")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "none of the gallery's hazard patterns found" in run.stdout


def test_a_factory_that_returns_no_model_is_a_usage_error(tmp_path):
    run = audit(tmp_path, "not_a_model")
    assert run.returncode == 2 and "returned a int, not an nn.Module" in run.stderr


def test_every_hazard_names_a_case():
    cases = {path.name for path in (ROOT / "cases").iterdir()}
    assert {kind.case for kind in HAZARDS.values()} <= cases
