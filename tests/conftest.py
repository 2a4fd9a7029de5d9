"""Helpers shared by the tests: run the gallery CLI and read its JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_gallery(
    *args: str, report_dir: Path, env: dict | None = None
) -> subprocess.CompletedProcess:
    """`python -m shared.harness run ARGS` in a child process, reports under ``report_dir``."""
    return subprocess.run(
        [sys.executable, "-m", "shared.harness", "run", *args, "--report-dir", str(report_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def read_report(report_dir: Path, case: str) -> dict[str, dict]:
    """The variants of a case's JSON report, by variant name."""
    data = json.loads((report_dir / f"{case}.json").read_text(encoding="utf-8"))
    return {variant["variant"]: variant for variant in data["variants"]}


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
