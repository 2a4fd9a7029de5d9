"""The READMEs' generated facts: current in the repo, added where missing, stable when re-run."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys

from shared.harness import readme
from shared.harness.catalog import case_names, load_case
from shared.harness.matrix import all_rows, flips, stored_bisections
from shared.harness.paths import REPO_ROOT

HAND_WRITTEN = """# demo — a title

## Symptom
It fails.

## Variants
| variant | expected |
|---|---|
| `broken.py` | REPRODUCED |

## Root cause
Two dtypes meet.

## How to run
pip install -e .

## What the verdicts mean
REPRODUCED: the bug happened.
"""


def test_every_readme_is_current():
    run = subprocess.run([sys.executable, "-m", "shared.harness", "readme", "--check"],
                         cwd=REPO_ROOT, capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr


def test_a_readme_without_markers_gets_the_facts_at_its_end_in_place_of_typed_ones():
    text = readme.rendered_case(HAND_WRITTEN, "## Variants\n\nthe facts")
    assert text.startswith("# demo — a title\n\n## Symptom\nIt fails.\n\n## Root cause\n")
    assert text.endswith(f"Two dtypes meet.\n\n{readme.CASE_BEGIN}\n## Variants\n\nthe facts\n"
                         f"{readme.CASE_END}\n")  # fmt: skip
    for typed in ("REPRODUCED |", "pip install", "What the verdicts mean"):
        assert typed not in text
    assert readme.rendered_case(text, "## Variants\n\nthe facts") == text  # idempotent
    newer = readme.rendered_case(text, "## Variants\n\nnewer")
    assert newer == text.replace("the facts", "newer")  # only the block changes


def test_text_after_the_facts_is_kept():
    text = readme.rendered_case(HAND_WRITTEN, "old") + "\n## Devices\nCUDA only.\n"
    assert readme.rendered_case(text, "new").endswith(f"new\n{readme.CASE_END}\n## Devices\n"
                                                      "CUDA only.\n")  # fmt: skip


def test_a_stale_readme_fails_the_check_naming_it(tmp_path, monkeypatch):
    stale = tmp_path / "README.md"
    stale.write_text("old", encoding="utf-8")
    monkeypatch.setattr(readme, "wanted_files", lambda: {stale: "new"})
    assert readme.readme_command(type("Args", (), {"check": True})()) == 1
    assert stale.read_text(encoding="utf-8") == "old"
    assert readme.readme_command(type("Args", (), {"check": False})()) == 0
    assert stale.read_text(encoding="utf-8") == "new"


def test_the_facts_come_from_case_toml_and_the_store():
    rows = all_rows()
    case = load_case("fsdp-lora-flat-dtype")
    facts = readme.facts(case, rows, flips(rows, stored_bisections()))
    for variant in case.variants:
        assert f"| [`{variant.name}`]({variant.script.name}) |" in facts
    assert "| [`fixed_fsdp2`](fixed_fsdp2.py) | PASSED; REPRODUCED on torch <2.8 | torch >=2.6 |" \
        in facts  # fmt: skip
    pinned = next(r for r in rows if (r.set, r.case) == ("pinned", case.name))
    assert f"| pinned | {pinned.versions['torch']} |" in facts
    assert "REPRODUCED from peft 0.12.0 [first release: 0.12.0" in facts  # a bisected boundary
    assert "python cases/fsdp-lora-flat-dtype/broken.py" in facts
    never_run = readme.facts(case, [], [])  # a new case: nothing stored yet
    assert "No stored run yet" in never_run and "| [`broken`](broken.py) |" in never_run


def test_no_case_readme_types_what_is_generated_or_installs_the_project():
    for name in case_names():
        text = (REPO_ROOT / "cases" / name / "README.md").read_text(encoding="utf-8")
        story = text.split(readme.CASE_BEGIN)[0]
        assert "pip install -e" not in text, name
        for section in readme.REPLACED_SECTIONS:
            assert f"\n## {section}\n" not in story, f"{name}: ## {section} typed by hand"


OUTLINE = ("Symptom", "Upstream", "Root cause", "Fix", "The model here", "Devices")
REQUIRED = OUTLINE[:4]


def test_every_case_readme_tells_its_story_in_the_one_outline():
    """The hand-written part: the template's headings, in its order (the last two optional)."""
    for name in case_names():
        text = (REPO_ROOT / "cases" / name / "README.md").read_text(encoding="utf-8")
        story = text.split(readme.CASE_BEGIN)[0]
        headings = [line[3:].strip() for line in story.splitlines() if line.startswith("## ")]
        assert all(h in OUTLINE for h in headings), f"{name}: {headings} outside {OUTLINE}"
        assert headings == sorted(headings, key=OUTLINE.index), f"{name}: order {headings}"
        assert set(REQUIRED) <= set(headings), f"{name}: needs {REQUIRED}, has {headings}"
    template = (REPO_ROOT / "cases" / "_template" / "README.md").read_text(encoding="utf-8")
    assert [line[3:] for line in template.splitlines() if line.startswith("## ")] == list(OUTLINE)


def test_a_versions_table_shows_the_library_its_boundaries_name():
    """offload-move's flip is in accelerate, which transformers imports for it: its versions
    table still has accelerate's column; a case that names no such library keeps torch's and
    its own imports' only."""
    shown = readme._shown_packages
    assert shown(load_case("offload-move")) == ["torch", "transformers", "accelerate"]
    assert shown(load_case("freeu-fft")) == ["torch", "diffusers"]


def test_every_boundary_a_story_states_is_on_record_or_read_in_source():
    """A version boundary in a case README's hand-written story ("from transformers 4.45",
    "torch < 2.3") is one its case.toml, its bisections or its stored runs hold (or those of a
    case the sentence names), or the sentence says it was read in source, never run."""
    from shared.harness.readme import unbacked_boundaries

    rows, bisections = all_rows(), stored_bisections()
    found = {}
    for name in case_names():
        for boundary in unbacked_boundaries(load_case(name), rows, bisections):
            found[name, boundary.split(":", 1)[0]] = boundary
    assert found == {}


def test_a_boundary_the_data_does_not_hold_is_found(tmp_path):
    """The check is not blind: a story that invents a boundary is caught, one marked as read
    in source is not."""
    from shared.harness.readme import unbacked_boundaries

    case = load_case("minicpm")
    folder = tmp_path / "minicpm"
    shutil.copytree(case.folder, folder)
    readme = folder / "README.md"
    story = readme.read_text(encoding="utf-8")
    readme.write_text(story.replace("## Root cause", "Gone since transformers 4.99.1.\n\n"
                                    "## Root cause", 1), encoding="utf-8")  # fmt: skip
    moved = dataclasses.replace(case, folder=folder)
    rows, bisections = all_rows(), stored_bisections()
    found = unbacked_boundaries(moved, rows, bisections)
    assert [b.split(":")[0] for b in found] == ["transformers 4.99.1"]
    readme.write_text(
        story.replace(
            "## Root cause",
            "Gone since transformers 4.99.1 (read in its modeling file).\n\n## Root cause",
            1,
        ),
        encoding="utf-8",
    )
    assert unbacked_boundaries(moved, rows, bisections) == []
