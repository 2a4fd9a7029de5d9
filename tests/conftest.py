"""Helpers shared by the tests: run the gallery CLI and read its JSON report.

``gallery``: the whole gallery run once per test session (``run --all``, the fast way: one parent
imports the libraries, every variant is forked from it); every test that needs a real case's
verdict, report, culprit, audit record or symptom reads that one run.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def first_answer(text: str):
    """explain's first answer to a text, once a session: the corpus tests, the node and the
    Chromium search tests all read the same large corpus."""
    from shared.harness.explain import explain

    return explain(text)[0]


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


@dataclass(frozen=True)
class GalleryRun:
    """One ``run --all``: its process, and every case's report."""

    process: subprocess.CompletedProcess
    report_dir: Path

    def report(self, case: str) -> dict[str, dict]:
        """The case's verdicts by variant name (an empty dict when the run wrote none)."""
        if not (self.report_dir / f"{case}.json").is_file():
            return {}
        return read_report(self.report_dir, case)

    def versions(self, case: str) -> dict[str, str | None]:
        text = (self.report_dir / f"{case}.json").read_text(encoding="utf-8")
        return json.loads(text)["versions"]

    def summary(self, case: str) -> str:
        """The case's ``=> CASE: ... -- as documented`` line."""
        found = re.search(rf"^  => {re.escape(case)}: .*$", self.process.stdout, re.MULTILINE)
        return found.group() if found else ""

    def evidence(self) -> str:
        return self.process.stdout[-6000:] + self.process.stderr[-3000:]


@pytest.fixture(scope="session")
def gallery(tmp_path_factory) -> GalleryRun:
    """Every case of the catalog (new ones too), run once for the whole session."""
    report_dir = tmp_path_factory.mktemp("gallery")
    return GalleryRun(run_gallery("--all", report_dir=report_dir), report_dir)
