"""The way in for a new case: the recipe page, the template, and the rules it states.

cases/README.md is the one page a contributor reads; these tests keep it true: every key the
catalog accepts is listed there, the template copied under a new name runs green on its own,
no case imports another's code, every package a case requires is one the harness records, no
CPU-runnable variant is skipped on the pinned set, and README.md's table is generated.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, read_report, run_gallery

from shared.harness.case import CASE_KEYS, FAMILIES, REQUIRES_KEYS, VARIANT_KEYS, WHEN_KEYS
from shared.harness.catalog import case_names, load_case
from shared.harness.libraries import VERSIONED_PACKAGES
from shared.harness.verdicts import Platform, skip_reason

RECIPE = ROOT / "cases" / "README.md"
TEMPLATE = ROOT / "cases" / "_template"
CASES = [load_case(name) for name in case_names()]


def test_the_recipe_lists_every_key_and_family_the_catalog_takes():
    listed = set(re.findall(r"`([a-z_\-]+)`", RECIPE.read_text(encoding="utf-8")))
    for keys in (CASE_KEYS, VARIANT_KEYS, WHEN_KEYS, REQUIRES_KEYS, FAMILIES):
        assert set(keys) <= listed, f"cases/README.md does not name {sorted(set(keys) - listed)}"


def test_the_template_copied_under_a_new_name_runs_green_on_its_own(tmp_path):
    cases_dir = tmp_path / "cases"
    shutil.copytree(TEMPLATE, cases_dir / "my-new-case",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    run = run_gallery("my-new-case", "--cases-dir", str(cases_dir), report_dir=tmp_path / "r")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    report = read_report(tmp_path / "r", "my-new-case")
    assert {name: v["kind"] for name, v in report.items()} == {
        "broken": "REPRODUCED", "fixed": "PASSED"}  # fmt: skip
    assert "my-new-case" not in case_names()  # the template itself is never a case


def _imports(path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


@pytest.mark.parametrize("folder", [case.folder for case in CASES] + [TEMPLATE],
                         ids=lambda folder: folder.name)  # fmt: skip
def test_a_case_imports_its_own_modules_by_plain_name_and_no_other_cases(folder):
    own = {path.stem for path in folder.glob("*.py")}
    others = {
        path.stem
        for path in (ROOT / "cases").glob("*/*.py")
        if path.parent != folder and path.stem not in own
    } - {"broken", "fixed"}
    for path in sorted(folder.glob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            assert top != "cases", f"{path.name}: import sibling modules by name, not {name}"
            assert top not in others or top in own, f"{path.name} imports another case's {name}"
            assert not name.startswith("shared.harness"), f"{path.name} imports the harness"
    assert not (folder / "__init__.py").exists(), "a case folder is not a package"


def test_a_misspelt_package_in_requires_is_refused_saying_what_to_extend(tmp_path):
    from shared.harness.catalog import CaseError

    shutil.copytree(TEMPLATE, tmp_path / "typo", ignore=shutil.ignore_patterns("__pycache__"))
    toml = tmp_path / "typo" / "case.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        "[[variant]]", '[requires]\npackages = { tranformers = ">=4.40" }\n\n[[variant]]', 1),
        encoding="utf-8")  # fmt: skip
    with pytest.raises(CaseError, match=r"unknown package\(s\) \['tranformers'\].*VERSIONED"):
        load_case("typo", tmp_path)


def _installed(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_no_cpu_runnable_variant_is_skipped_on_the_pinned_set(case):
    platform = Platform({name: _installed(name) for name in VERSIONED_PACKAGES})
    for variant in case.variants:
        if variant.requires.cuda:
            continue
        assert skip_reason(variant.requires, platform, "cpu") is None, (
            f"{case.name}/{variant.name} is skipped on the pinned set: "
            f"{skip_reason(variant.requires, platform, 'cpu')}"
        )


def test_every_case_belongs_to_a_known_family():
    assert {case.family for case in CASES} <= set(FAMILIES)


def test_the_readme_table_of_cases_is_generated_and_current():
    run = subprocess.run([sys.executable, "-m", "shared.harness", "readme", "--check"],
                         cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for case in CASES:
        assert f"[`{case.name}`](cases/{case.name}/)" in readme
