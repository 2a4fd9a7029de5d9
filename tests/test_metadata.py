"""case.toml validation: every mistake is a clear CaseError naming the file and the problem."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from conftest import ROOT
from helpers import case_toml

from shared.harness import case, kinds, libraries, verdicts
from shared.harness.case import FAILURES, CaseError
from shared.harness.catalog import case_names, load_case

GOOD = case_toml("""
[[variant]]
name = "broken"
script = "broken.py"
expect = "error"
error = "RuntimeError"
message = 'Input type \\(c10::Half\\) and bias type \\(float\\)'

  [[variant.when]]
  torch = "<2.1"
  device = "cuda"
  message = 'old text'

[[variant]]
name = "fixed"
script = "fixed.py"
expect = "pass"
requires = { cuda = true, gpus = 2, packages = { transformers = ">=5" }, reason = "why" }
""")


def make_case(tmp_path, toml: str, scripts=("broken.py", "fixed.py")):
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "case.toml").write_text(toml, encoding="utf-8")
    for script in scripts:
        (folder / script).write_text("", encoding="utf-8")
    return tmp_path


def test_good_case_loads(tmp_path):
    case = load_case("demo", make_case(tmp_path, GOOD))
    broken, fixed = case.variants
    assert broken.expectation.message_matches("Input type (c10::Half) and bias type (float) should")
    assert fixed.requires.cuda and fixed.requires.gpus == 2
    assert fixed.requires.packages["transformers"].contains("5.23.0")


def test_when_entries_pick_the_expectation_by_version_and_device(tmp_path):
    broken = load_case("demo", make_case(tmp_path, GOOD)).variants[0]
    old_cuda = broken.expectation_for({"torch": "2.0.1"}, "cuda")
    assert old_cuda.messages == ("old text",)
    assert old_cuda.error == "RuntimeError"  # inherited from the base expectation
    assert broken.expectation_for({"torch": "2.0.1"}, "cpu") == broken.expectation
    assert broken.expectation_for({"torch": "2.13.0"}, "cuda") == broken.expectation


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (('expect = "pass"', 'expect = "passes"'), "expect must be one of"),
        (('error = "RuntimeError"\n', ""), "needs both 'error' (type) and 'message'"),
        (("message = 'Input", "message = '(Input"), "bad regular expression"),
        (('script = "fixed.py"', 'script = "missing.py"'), "does not exist"),
        (('name = "fixed"', 'name = "broken"'), "variant names must be unique"),
        (('torch = "<2.1"', 'torch = "two"'), "is not a version specifier"),
        (('device = "cuda"', 'device = "tpu"'), "device must be 'cpu' or 'cuda'"),
        (('title = "t"', 'titel = "t"'), "unknown key(s) ['titel']; did you mean `title` for"),
        (('script = "broken.py"', 'script = "broken.py"\nrasied_in = "x"'),
         "did you mean `raised_in` for `rasied_in`?"),
        (("device = \"cuda\"", "device = \"cuda\"\ntorch_version = '<2'"), "unknown key(s)"),
        (('expect = "pass"', 'expect = "pass"\ntimeout = "long"'), "timeout must be a number"),
        (('expect = "pass"', 'expect = "pass"\nwhen = { torch = "<2" }'),
         "when must be a list of tables"),
        (('title = "t"', 'title = ""'), "title must be a non-empty string"),
        (("gpus = 2", "gpus = 2.5"), "gpus must be a whole number"),
        (('transformers = ">=5"', 'tranformers = ">=5"'),
         "did you mean `transformers` for `tranformers`?"),
        (("gpus = 2", "gpus = -1"), "gpus a whole number"),
        (('expect = "pass"', "expect = \"pass\"\nmessage = 'x'"), "takes no ['message']"),
        (('expect = "pass"', 'expect = "pass"\nfixes = "nothing"'), "fixes = 'nothing' must"),
        (('expect = "pass"', 'expect = "pass"\nfix_changes = ["adds float32"]'),
         "fix_changes needs fixes"),
        (('expect = "pass"', 'expect = "pass"\nfixes = "broken"\nfix_changes = ["adds fp32"]'),
         "fix_changes must be a list of 'adds <fact>' / 'drops <fact>'"),
        (('expect = "pass"', 'expect = "pass"\nfixes = "broken"\nfix_changes = "adds float32"'),
         "fix_changes must be a list"),
        (('expect = "pass"', 'expect = "symptom"\nsymptom = "x"'), "exactly one of 'above'"),
        (('expect = "pass"', 'expect = "symptom"\nabove = 1'), "needs 'symptom'"),
        (('expect = "pass"', 'expect = "symptom"\nsymptom = "x"\nabove = "1"'), "a number"),
        (('expect = "pass"', 'expect = "warning"\nmessage = "x"'), "'warning' (category)"),
        (('expect = "pass"', 'expect = "absent"\nraised_in = "x"'), "takes no ['raised_in']"),
        (("message = 'old text'", "culprit = '('"), "bad regular expression"),
        (('issue = "https://example.invalid/1"', ""), "'issue' is required"),
        (("era_start = 2024-01-01", 'era_start = "2024-01-01"'),
         "era_start must be a TOML date, YYYY-MM-DD with no quotes"),
        (("era_start = 2024-01-01", ""), "'era_start' is required (a TOML date, YYYY-MM-DD"),
        (('family = "dtype-mix"', 'family = "dtype mix"'), "family must be one of"),
        (('family = "dtype-mix"', ""), "'family' is required"),
        (('cause = "c"', ""), "'cause' is required"),
        (('cause = "c"', 'cause = "c"\nphrases = "black image"'), "phrases must be a list"),
        (("era_start = 2024-01-01", "era_start = 2024-01-01\nusual_cause_of = ['x']"),
         "usual_cause_of must be a list of tables"),
        (("era_start = 2024-01-01", "era_start = 2024-01-01\n[[usual_cause_of]]\npattern = '('"),
         "is not a valid regex"),
        (("era_start = 2024-01-01", "era_start = 2024-01-01\n[[usual_cause_of]]\nnamed = ['x']"),
         "'pattern' is required"),
        (("era_start = 2024-01-01",
          "era_start = 2024-01-01\n[[usual_cause_of]]\npattern = 'x'\nvariant = 'nope'"),
         "variant 'nope' is not a variant of this case"),
        (("era_start = 2024-01-01",
          "era_start = 2024-01-01\n[[usual_cause_of]]\npattern = 'x'\nunless_named = 'y'"),
         "unless_named must be a list"),
    ],
)
def test_malformed_metadata_is_a_clear_error(tmp_path, change, complaint):
    old, new = change
    assert old in GOOD
    with pytest.raises(CaseError, match="demo") as caught:
        load_case("demo", make_case(tmp_path, GOOD.replace(old, new, 1)))
    assert complaint in str(caught.value)


def test_a_case_needs_a_broken_and_a_fixed_variant(tmp_path):
    only_broken = GOOD.split('[[variant]]\nname = "fixed"')[0]
    with pytest.raises(CaseError, match="at least one variant with expect = 'pass'"):
        load_case("demo", make_case(tmp_path, only_broken))


def test_invalid_toml_and_missing_metadata(tmp_path):
    with pytest.raises(CaseError, match="not valid TOML"):
        load_case("demo", make_case(tmp_path, "title = "))
    (tmp_path / "empty").mkdir()
    with pytest.raises(CaseError, match="no case.toml"):
        load_case("empty", tmp_path)


def test_every_case_in_the_repo_loads():
    names = case_names()
    assert "minicpm" in names
    for name in names:
        case = load_case(name)
        assert any(v.expectation.expect in FAILURES for v in case.variants)
        assert case.issue.startswith("https://github.com/")
        assert (case.folder / "README.md").is_file(), f"{name} needs a README"


def test_cpu_only_floors_skip_on_the_cpu_only(tmp_path):
    from shared.harness.verdicts import Platform, skip_reason

    toml = GOOD.replace(
        'requires = { cuda = true, gpus = 2, packages = { transformers = ">=5" }, reason = "why" }',
        'requires = { packages = { transformers = ">=5" }, cpu_packages = { torch = ">=2.3" }, '
        'reason = "fp16 kernels" }',
    )
    requires = load_case("demo", make_case(tmp_path, toml)).variants[1].requires
    old_torch = {"torch": "2.1.2", "transformers": "5.23.0"}
    assert skip_reason(requires, Platform(old_torch)) == (
        "needs torch>=2.3, found 2.1.2 on the CPU (fp16 kernels)"
    )
    assert skip_reason(requires, Platform(old_torch, cuda_device_names=("H100",))) is None
    no_transformers = {"torch": "2.13.0", "transformers": None}
    assert skip_reason(requires, Platform(no_transformers)) == (
        "needs transformers>=5, found none (fp16 kernels)"
    )


def test_fixes_names_a_failing_variant_and_is_kept(tmp_path):
    toml = GOOD.replace('expect = "pass"', 'expect = "pass"\nfixes = "broken"', 1)
    case = load_case("demo", make_case(tmp_path, toml))
    assert case.variants[1].fixes == "broken"


def test_fix_changes_are_what_the_fix_may_change_in_its_twins_setting(tmp_path):
    """A fix runs its twin's setting (models by name, autocast), but for what it declares."""
    from shared.harness.report import ProcessResult

    declared = '["drops float16", "adds float32", "adds autocast:bfloat16"]'
    toml = GOOD.replace(
        'expect = "pass"', f'expect = "pass"\nfixes = "broken"\nfix_changes = {declared}'
    )
    fixed = load_case("demo", make_case(tmp_path, toml)).variants[1]
    assert fixed.setting_changes == ({"float32", "autocast:bfloat16"}, {"float16"})

    def ran(models: dict, autocast=()) -> ProcessResult:
        return ProcessResult(setting={"models": models, "autocast": list(autocast)})

    twin = ran({"model": ["float16", "quantized:Linear4bit"], "reference": ["float32"]})
    as_declared = ran({"model": ["float32", "quantized:Linear4bit"]}, ["autocast:bfloat16"])
    assert verdicts.setting_mismatch(fixed, as_declared, twin) == ""
    unquantized = ran({"model": ["float32"]})
    stripped = verdicts.setting_mismatch(fixed, unquantized, twin)
    assert "`model` drops quantized:Linear4bit" in stripped
    undeclared = ran({"model": ["bfloat16", "quantized:Linear4bit"]}, ["autocast:float16"])
    found = verdicts.setting_mismatch(fixed, undeclared, twin)
    assert "autocast adds autocast:float16" in found and "`model` adds bfloat16" in found
    assert verdicts.setting_mismatch(fixed, unquantized, None) == ""  # no twin ran: not judged
    assert verdicts.setting_mismatch(fixed, unquantized, ran({})) == ""  # it recorded nothing


def test_every_fix_changes_entry_names_a_change_a_run_needs(gallery):
    """A declaration is no blanket: each fact a fix declares it adds (drops) is one its model or
    autocast holds (its twin holds) in a run where both ran: the session's, or a stored set's
    (a change only some versions need: bf16-unsupported-setup's fixed_checked drops the CPU's
    bfloat16 autocast its twin trains in on transformers < 4.52.1)."""
    stored = sorted((ROOT / "reports" / "matrix" / "sets").glob("*/*.json"))
    for name in case_names():
        runs = [gallery.report(name)] + [
            {v["variant"]: v for v in json.loads(path.read_text(encoding="utf-8"))["variants"]}
            for path in stored if path.stem == name
        ]  # fmt: skip
        for variant in load_case(name).variants:
            if not variant.fix_changes:
                continue
            held, both_ran = {"ours": set(), "theirs": set()}, False
            for report in runs:
                if variant.name not in report or variant.fixes not in report:
                    continue
                ours, theirs = (report[v].get("setting") for v in (variant.name, variant.fixes))
                if not ours or not theirs or report[variant.fixes]["kind"] == "SKIPPED":
                    continue
                both_ran = True
                for side, setting in (("ours", ours), ("theirs", theirs)):
                    held[side] |= set(setting.get("autocast", [])).union(
                        *setting.get("models", {}).values())  # fmt: skip
            if not both_ran:  # a CUDA-only fix on this machine and every stored set
                continue
            adds, drops = variant.setting_changes
            assert adds <= held["ours"], (name, variant.name, adds - held["ours"])
            assert drops <= held["theirs"], (name, variant.name, drops - held["theirs"])


SILENT = case_toml("""
[[variant]]
name = "broken"
script = "broken.py"
expect = "symptom"
symptom = "logits error"
above = 1.5

  [[variant.when]]
  torch = "<2.1"
  expect = "absent"

[[variant]]
name = "fixed"
script = "fixed.py"
expect = "pass"
fixes = "broken"
""")


def test_an_absent_entry_inherits_the_symptom_it_checks(tmp_path):
    broken = load_case("demo", make_case(tmp_path, SILENT)).variants[0]
    old = broken.expectation_for({"torch": "2.0.0"}, "cpu")
    assert (old.expect, old.symptom, old.above) == ("absent", "logits error", 1.5)
    assert old.symptom_present(2.0) and not old.symptom_present(1.0)
    assert broken.expectation_for({"torch": "2.13.0"}, "cpu").expect == "symptom"


def test_a_skip_gives_the_reason_of_the_requirement_that_failed(tmp_path):
    """A variant's own reason must not stand in for the case's requirement it does not explain."""
    from shared.harness.verdicts import Platform, skip_reason

    toml = GOOD.replace(
        "[[variant]]",
        '[requires]\npackages = { transformers = ">=4.37" }\nreason = "SigLIP arrived in 4.37"\n\n'
        "[[variant]]",
        1,
    ).replace("message = 'old text'\n", "message = 'old text'\n  [variant.requires]\n"
              "  cuda = true\n  reason = \"the CUDA text\"\n", 1)  # fmt: skip
    broken = load_case("demo", make_case(tmp_path, toml)).variants[0]
    old = Platform({"torch": "2.13.0", "transformers": "4.36.2"}, ("GPU",))
    assert skip_reason(broken.requires, old) == (
        "needs transformers>=4.37, found 4.36.2 (SigLIP arrived in 4.37)")  # fmt: skip
    no_gpu = Platform({"torch": "2.13.0", "transformers": "4.57.3"})
    assert skip_reason(broken.requires, no_gpu) == "needs CUDA, no CUDA device here (the CUDA text)"


def test_a_when_entry_may_say_what_the_audit_finds_there(tmp_path):
    toml = GOOD.replace('family = "dtype-mix"', 'family = "dtype-mix"\nhazard = "half-fft"')
    toml = toml.replace("message = 'old text'", 'expect = "absent"\n  audit = "clean"')
    toml = toml.replace('script = "broken.py"', 'script = "broken.py"\naudit = "flagged"')
    broken = load_case("demo", make_case(tmp_path, toml)).variants[0]
    assert broken.audit_kinds == {"flagged", "clean"}
    assert broken.audit_for({"torch": "2.0.1"}, "cuda") == "clean"
    assert broken.audit_for({"torch": "2.13.0"}, "cuda") == "flagged"


def test_flagged_or_clean_needs_the_case_hazard_a_named_kind_does_not(tmp_path):
    toml = GOOD.replace("message = 'old text'", 'audit = "flagged"')
    with pytest.raises(CaseError, match="'flagged' / 'clean' needs the case's hazard"):
        load_case("demo", make_case(tmp_path, toml))
    toml = GOOD.replace('script = "broken.py"', 'script = "broken.py"\naudit = "half-fft"')
    (tmp_path / "named").mkdir()
    assert load_case("demo", make_case(tmp_path / "named", toml)).variants[0].audit == "half-fft"
    toml = GOOD.replace('script = "broken.py"', 'script = "broken.py"\naudit = "hazardous"')
    (tmp_path / "unknown").mkdir()
    with pytest.raises(CaseError, match="or a hazard kind of shared/hazards.py"):
        load_case("demo", make_case(tmp_path / "unknown", toml))


def test_every_package_a_variant_imports_beyond_the_stack_is_declared():
    from shared.harness.catalog import imported_packages
    from shared.harness.libraries import DECLARED_PACKAGES, STACK_IMPORTS

    by_import = {module: name for name, module in DECLARED_PACKAGES.items()}
    undeclared = []
    for case_name in case_names():
        for variant in load_case(case_name).variants:
            for module in sorted(imported_packages(variant.script) - set(STACK_IMPORTS)):
                package = by_import.get(module, module)
                if package not in variant.requires.packages:
                    undeclared.append(f"{case_name}/{variant.name}: {package}")
    assert not undeclared, f"imported, not in the variant's requires.packages: {undeclared}"
    kahan = {v.name: v for v in load_case("bf16-pure-training").variants}["fixed_kahan"]
    assert "torch-optimi" in kahan.requires.packages  # the one the test must find: it reads imports


def test_a_variant_whose_extra_package_is_missing_is_skipped_naming_it():
    from shared.harness.verdicts import Platform, skip_reason

    kahan = {v.name: v for v in load_case("bf16-pure-training").variants}["fixed_kahan"]
    without = Platform({"torch": "2.13.0", "transformers": "5.23.0", "torch-optimi": None})
    assert skip_reason(kahan.requires, without) == (
        "needs torch-optimi>=0.1, found none (optimi.AdamW(kahan_sum=True))"
    )
    # Not among the recorded versions: the installed one (the pinned set holds it).
    assert skip_reason(kahan.requires, Platform({"torch": "2.13.0"})) is None


def test_no_raise_site_is_the_gallery_s_own_code():
    """`raised_in` proves a library refused: it never names a case's scripts or shared/."""
    import re

    for case_name in case_names():
        case = load_case(case_name)
        own = [f"{path.name}:<module>" for path in case.folder.glob("*.py")]
        own += ["shared/checks.py:check_that", "shared/culprit.py:__torch_function__"]
        for variant in case.variants:
            for expectation in (variant.expectation, *(c.expectation for c in variant.conditions)):
                if expectation.raised_in:
                    named = [f for f in own if re.search(expectation.raised_in, f)]
                    assert not named, f"{case_name}/{variant.name}: raised_in names {named}"


def test_under_complete_env_a_declared_package_missing_is_exit_2_naming_it(monkeypatch, capsys):
    """nox --no-venv runs the harness with --complete-env: the environment must hold the set."""
    from shared.harness import cli

    real = cli.installed_version
    monkeypatch.setattr(
        cli, "installed_version", lambda name: None if name == "torch-optimi" else real(name)
    )
    assert cli.main(["run", "bf16-pure-training", "--complete-env"]) == cli.ExitCode.USAGE_ERROR
    assert "torch-optimi (bf16-pure-training/fixed_kahan)" in capsys.readouterr().err


def _string_constants(module: Path) -> set[str]:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}  # fmt: skip


def test_verdict_kinds_case_keys_and_libraries_each_have_one_owner():
    """A verdict kind is spelled in shared/harness/kinds.py alone, an expectation key in
    case.py alone (the catalog and the judge hand case.toml's tables over without naming one),
    and a recorded library's name in libraries.py alone among the harness's modules that make
    runs (the README generator and the explain vocabulary read it too)."""
    names = {kind.name for kind in kinds.KINDS}
    shared = Path(kinds.__file__).parent.parent
    spelled = {
        str(module.relative_to(shared.parent)): sorted(found)
        for module in shared.rglob("*.py")
        if module != Path(kinds.__file__) and (found := _string_constants(module) & names)
    }
    assert spelled == {}
    expectation_keys = set(case.EXPECTATION_KEYS) - {"error", "warning", "symptom", "note"}
    for module in ("catalog.py", "verdicts.py"):
        assert _string_constants(shared / "harness" / module) & expectation_keys == set(), module
    versioned = set(libraries.VERSIONED_PACKAGES) - {"torch"}  # torch: a module name too
    for module in ("catalog.py", "case.py", "environment.py", "library_sets.py", "runner.py",
                   "readme.py", "verdicts.py", "site/build.py", "site/timeline.py"):  # fmt: skip
        assert _string_constants(shared / "harness" / module) & versioned == set(), module


def test_the_key_table_gives_each_table_its_keys_and_each_expectation_its_keys():
    assert case.CASE_KEYS[:3] == ("title", "summary", "cause")
    assert set(case.WHEN_KEYS) == {*case.EXPECTATION_KEYS, *libraries.VERSIONED_PACKAGES,
                                   "device", "audit"}  # fmt: skip
    assert case.KEYS_OF["error"] == {"error", "message", "raised_in", "culprit"}
    assert case.KEYS_OF["pass"] == set()
    assert case.KEYS_OF["absent"] == {"symptom", "above", "below", "warning", "message",
                                      "issued_in"}  # fmt: skip
    names = [(key.name, table) for key in case.KEYS for table in key.where]
    assert len(names) == len(set(names)), "a key listed twice for one table"


def test_a_when_entry_overrides_what_it_names_and_inherits_what_its_kind_takes():
    base = case.Expectation.from_table({"expect": "symptom", "symptom": "nan", "above": 0.5,
                                        "note": "n"})  # fmt: skip
    assert base.overridden({"below": 0.1}) == case.Expectation(
        "symptom", symptom="nan", below=0.1, note="n")  # a new bound replaces the old one
    absent = base.overridden({"expect": "absent"})
    assert (absent.expect, absent.symptom, absent.above) == ("absent", "nan", 0.5)
    error = case.Expectation.from_table({"expect": "error", "error": "RuntimeError",
                                         "message": ["a", "b"], "culprit": "x"})  # fmt: skip
    assert error.overridden({"message": "c"}).messages == ("c",)
    assert error.overridden({"expect": "pass"}) == case.Expectation("pass")
    with pytest.raises(ValueError, match="takes no"):
        error.overridden({"expect": "pass", "culprit": "y"})


def test_the_recipe_s_key_list_is_generated_from_the_key_table():
    from shared.harness import readme

    recipe = readme.RECIPE.read_text(encoding="utf-8")
    listed = recipe.split(readme.KEYS_BEGIN)[1].split(readme.KEYS_END)[0]
    assert listed.strip() == readme.keys_list()
    for key in case.KEYS:
        assert f"`{key.name}`" in listed and key.doc in listed or key.takes, key.name


def test_the_site_s_badge_colours_and_the_readme_glossary_come_from_the_kinds():
    from shared.harness import readme

    template = (Path(kinds.__file__).parent / "site" / "templates" / "style.css").read_text()
    assert "#ddf4ff" not in template and ".verdict.anomaly" not in template  # no second copy
    css = kinds.stylesheet()
    for kind in kinds.KINDS:
        rule = f".verdict.{kind.css_class} {{ background: {kind.colours.fill}; "
        assert rule in css, kind.name
    assert css.count(".verdict.anomaly") == 1  # every anomaly shares one badge
    glossary = readme.README.read_text(encoding="utf-8").split(readme.KINDS_BEGIN)[1]
    for kind in kinds.KINDS:
        assert f"| {kind.name} | {kind.meaning} |" in glossary
    assert [kinds.order(k) for k in ("REPRODUCED", "SKIPPED", "CRASHED", "NEW")] == [0, 3, 8, 9]
    assert kinds.kind_of("NEW").role == kinds.ANOMALY  # a kind of another release: an anomaly


def test_the_library_table_names_each_distribution_and_module_once():
    names = [lib.name for lib in libraries.LIBRARIES]
    modules = [lib.module for lib in libraries.LIBRARIES]
    assert len(set(names)) == len(names) and len(set(modules)) == len(modules)
    assert libraries.VERSIONED_PACKAGES[0] == "torch"
    assert libraries.CASE_LIBRARIES["torch-optimi"] == "optimi"
    assert "PIL" in libraries.STACK_IMPORTS and "optimi" not in libraries.STACK_IMPORTS
    assert libraries.NOT_PRELOADED == ("bitsandbytes",)
    assert {lib.role for lib in libraries.LIBRARIES} == set(libraries.ROLES)


def test_the_cases_group_pins_exactly_the_libraries_a_case_may_import():
    """pyproject.toml's `cases` group (what `nox -s case-*`, the Docker image and the offline
    recipe install) pins each library a case may import (versioned or declared) to one release,
    and names no package the library table does not know."""
    import tomllib

    from packaging.requirements import Requirement

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = {}
    for line in pyproject["dependency-groups"]["cases"]:
        requirement = Requirement(line)
        pins[requirement.name] = requirement.specifier
    assert set(pins) <= set(libraries.BY_NAME), sorted(set(pins) - set(libraries.BY_NAME))
    for name in libraries.CASE_LIBRARIES:
        assert name in pins, f"{name} is a case library but the cases group does not pin it"
        (spec,) = pins[name]
        assert spec.operator == "==", f"{name}: pinned with {spec}, not one release"
