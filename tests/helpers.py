"""What several test files build the same way: a synthetic case (its case.toml header and its
folder), and a variant run by hand as a learner runs it (``python cases/<case>/<variant>.py``).

The header holds every case-level key case.toml requires and nothing else; a test that is about
one of those keys replaces its line (``CASE_HEADER.replace('family = "dtype-mix"', ...)``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from shared.harness.lines import PREFIX

ROOT = Path(__file__).resolve().parents[1]

CASE_HEADER = """\
title = "t"
summary = "s"
project = "tests"
issue = "https://example.invalid/1"
family = "dtype-mix"
cause = "c"
era_start = 2024-01-01
"""


def case_toml(variants: str) -> str:
    """A synthetic case's case.toml: the header, then ``variants`` (its ``[[variant]]`` tables)."""
    return f"{CASE_HEADER}\n{variants.lstrip()}"


def write_case(cases_dir: Path, name: str, toml: str, scripts: dict[str, str] | tuple) -> Path:
    """``cases_dir/name/`` holding ``toml`` as case.toml and the scripts (a dict of sources,
    or file names for empty ones); returns ``cases_dir`` (what ``--cases-dir`` and
    ``load_case`` take)."""
    folder = cases_dir / name
    folder.mkdir(parents=True)
    (folder / "case.toml").write_text(toml, encoding="utf-8")
    sources = scripts if isinstance(scripts, dict) else dict.fromkeys(scripts, "")
    for file_name, source in sources.items():
        (folder / file_name).write_text(textwrap.dedent(source), encoding="utf-8")
    return cases_dir


def run_by_hand(script: Path) -> tuple[subprocess.CompletedProcess, str]:
    """Run a variant as a learner does, from the repository root, nothing installed; return the
    run and its verdict line (or, when there is none, the last line of each stream)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GALLERY_HARNESS")}
    run = subprocess.run([sys.executable, str(script.relative_to(ROOT))], cwd=ROOT,
                         capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    # The line ends stdout (a clean run) or stderr (after the traceback), whatever the other
    # stream printed (library warnings, exit messages).
    ends = [next((line for line in reversed(out.splitlines()) if line.strip()), "")
            for out in (run.stdout, run.stderr)]  # fmt: skip
    return run, next((line for line in ends if line.startswith(PREFIX)), " | ".join(ends))
