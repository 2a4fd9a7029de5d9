"""`explain` on real texts quoted in upstream threads (tests/explain_texts/README.md).

- `upstream/<case>.txt`: the case's own upstream text names that case first;
- `held_out/<case>--<n>.txt`: the same failure from another thread, chosen without looking at what
  `explain` answers, names that case first;
- `near_miss/<n>.txt`: a real error that is no documented case matches nothing (exit 1).

`pending/` holds texts for cases not in the tree yet; nothing here reads it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from shared.harness.catalog import case_names, load_case
from shared.harness.explain import explain, first_place

TEXTS = ROOT / "tests" / "explain_texts"
CASES = [load_case(name) for name in case_names()]
URL_LINE = re.compile(r"# https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+")


def files(folder: str) -> list[Path]:
    return sorted((TEXTS / folder).glob("*.txt"), key=lambda p: p.name)


def text_of(path: Path) -> str:
    """The quoted text, without its `# URL` line (checked here)."""
    first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    assert URL_LINE.fullmatch(first), f"{path.name}: first line is not '# <thread URL>': {first!r}"
    assert rest.strip(), f"{path.name}: no text after the URL line"
    return rest


def case_of(path: Path) -> str:
    return path.stem.split("--", 1)[0]


def answer(path: Path) -> list[tuple[str, str, int, str]]:
    return [(m.case, m.variant, m.rank, m.how) for m in explain(text_of(path), CASES)]


LABELLED = files("upstream") + files("held_out")


def test_every_labelled_text_names_a_case_of_this_tree():
    assert files("upstream") and len(files("held_out")) >= 8 and len(files("near_miss")) >= 8
    unknown = [p.name for p in LABELLED if case_of(p) not in case_names()]
    assert not unknown, f"no such case folder (put the text under pending/): {unknown}"
    held_out_cases = {case_of(p) for p in files("held_out")}
    assert len(held_out_cases) >= 8, held_out_cases


@pytest.mark.parametrize("path", LABELLED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_real_text_of_a_documented_failure_names_its_case_first(path):
    """First, or tied first with the cases that document the very same message (a bare error
    line cannot tell them apart, and the answer says so)."""
    found = explain(text_of(path), CASES)
    first = [match.case for match in first_place(found)]
    assert case_of(path) in first, (
        f"{path.name}: expected {case_of(path)} first, explain returned {answer(path) or 'nothing'}"
    )


@pytest.mark.parametrize("path", files("near_miss"), ids=lambda p: f"near_miss/{p.name}")
def test_a_real_near_miss_matches_nothing_and_the_command_exits_1(path):
    text = text_of(path)
    assert answer(path) == []
    run = subprocess.run([sys.executable, "-m", "shared.harness", "explain", "--file", "-"],
                         cwd=ROOT, input=text, capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith("no documented case; closest:")
