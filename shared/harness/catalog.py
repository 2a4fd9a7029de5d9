"""Case metadata: discover the folders under ``cases/`` and load their ``case.toml``.

Loading validates everything up front (unknown keys, bad regexes, missing scripts, bad version
specifiers), so a typo in a case file is a clear error instead of a silently green run.
This module imports no torch: nox and the CLI use it before any heavy import.
"""

from __future__ import annotations

import ast
import datetime
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from shared.harness.paths import CASES_DIR, relative
from shared.harness.verdicts import (
    EXPECTATION_KEYS,
    FAILURES,
    FIX_CHANGE,
    SILENT_FAILURES,
    VERSIONED_PACKAGES,
    Expectation,
    unmet_version,
)
from shared.hazards import HAZARDS

METADATA_FILE = "case.toml"

# What a stack brings along with those (their own dependencies): a case script may import these
# without declaring them. By import name.
STACK_IMPORTS = (*VERSIONED_PACKAGES, "numpy", "PIL", "packaging", "safetensors", "tokenizers",
                 "huggingface_hub")  # fmt: skip
# Any other package a variant imports is named in its `requires.packages` (a test reads the
# scripts' imports), so that where it is missing the variant is SKIPPED naming it.
# Distribution name -> import name.
EXTRA_PACKAGES = {"torch-optimi": "optimi"}
LAUNCHERS = ("python", "torchrun")
# The families of failure a case belongs to (`family = "..."`): the index groups cases by them.
FAMILIES = {
    "dtype-mix": "inputs and weights in different dtypes meet in one op",
    "device-placement": "a module, tensor or generator left on the wrong device",
    "precision-loss": "values silently rounded by a lower precision",
    "overflow": "values beyond float16's range: inf, NaN, or a clamp that hides them",
    "gradient-scaling": "mixed-precision training machinery refuses or skips half gradients",
    "unsupported-dtype": "an op or kernel has no implementation for a dtype",
    "offload": "accelerate's hooks and offloaded weights",
    "meta-tensors": "parameters left on the meta device (no data) and then moved or copied",
    "distributed": "sharded or multi-rank training and inference",
    "quantization": "quantized weights and what merging or casting does to them",
    "masks": "attention masks whose dtype changes what they mean",
    "optimizer-numerics": "optimizer updates lost or distorted by the parameters' dtype",
    "hardware": "a precision the device (or the installed torch build) cannot run, refused or ignored",
}
# The keys each table of a case.toml takes (cases/README.md documents each; a test checks).
CASE_KEYS = ("title", "summary", "cause", "fix", "asks", "phrases", "project", "issue", "family",
             "hazard", "era", "era_start", "usual_cause_of", "requires", "variant")  # fmt: skip
USUAL_CAUSE_KEYS = ("pattern", "named", "unless_named", "variant")
VARIANT_KEYS = ("name", "script", "timeout", "launcher", "ranks", "requires", "when", "fixes",
                "fix_changes", "audit", *EXPECTATION_KEYS)  # fmt: skip
# What the audit (shared.culprit) finds in a variant: the case's hazard ("flagged"), not it
# ("clean"), or another pattern named by its kind (a variant that fails another way).
AUDITS = ("flagged", "clean")
WHEN_KEYS = ("device", *VERSIONED_PACKAGES, *EXPECTATION_KEYS, "audit")
REQUIRES_KEYS = ("cuda", "gpus", "packages", "cpu_packages", "reason")


class CaseError(Exception):
    """A case folder or its metadata is unusable; the message says what to fix."""


@dataclass(frozen=True)
class Requirements:
    """What a variant needs; unmet requirements make it SKIPPED, never passed."""

    cuda: bool = False
    gpus: int = 0
    packages: dict[str, SpecifierSet] = field(default_factory=dict)
    # Floors that only hold on the CPU (e.g. CPU float16 kernels arrived later than CUDA ones).
    cpu_packages: dict[str, SpecifierSet] = field(default_factory=dict)
    # Why each requirement is there, said with its skip: "cuda", "packages:<name>",
    # "cpu_packages:<name>" -> the reason of the table (case or variant) that set it.
    reasons: dict[str, str] = field(default_factory=dict)

    def reason_for(self, requirement: str) -> str:
        return self.reasons.get(requirement, "")


@dataclass(frozen=True)
class Condition:
    """A ``[[variant.when]]`` entry: an expectation that holds on some versions or devices."""

    packages: dict[str, SpecifierSet]
    device: str
    expectation: Expectation
    audit: str = ""  # the audit's finding where it holds ("" keeps the variant's)

    def holds(self, versions: dict[str, str | None], device: str) -> bool:
        if self.device and self.device != device:
            return False
        return unmet_version(self.packages, versions) is None


@dataclass(frozen=True)
class Variant:
    name: str
    script: Path
    expectation: Expectation
    requires: Requirements
    conditions: tuple[Condition, ...] = ()
    timeout: float = 300.0
    launcher: str = "python"
    ranks: int = 1
    fixes: str = ""  # the broken variant this one fixes: their diff is the fix
    # What the fix changes in the setting its twin fails in ("adds float32", "drops float16":
    # verdicts.FIX_CHANGE); anything else differing is FIX-FAILED (verdicts.setting_mismatch).
    fix_changes: tuple[str, ...] = ()
    audit: str = ""  # "flagged" / "clean": the case's hazard in the models it ends with

    @property
    def setting_changes(self) -> tuple[set[str], set[str]]:
        """The setting facts the fix declares it adds, and those it drops."""
        changes = [change.split(" ", 1) for change in self.fix_changes]
        return ({fact for how, fact in changes if how == "adds"},
                {fact for how, fact in changes if how == "drops"})  # fmt: skip

    @property
    def may_fail_silently(self) -> bool:
        """Whether on some versions its documented failure (or its absence) is measured."""
        expectations = [self.expectation, *(c.expectation for c in self.conditions)]
        return any(e.expect in SILENT_FAILURES or e.symptom for e in expectations)

    def expectation_for(self, versions: dict[str, str | None], device: str) -> Expectation:
        """The base expectation, overridden by the first ``when`` entry that holds."""
        for condition in self.conditions:
            if condition.holds(versions, device):
                return condition.expectation
        return self.expectation

    @property
    def audit_kinds(self) -> set[str]:
        """The audit values this variant declares, here and in its ``when`` entries."""
        return {a for a in (self.audit, *(c.audit for c in self.conditions)) if a}

    def audit_for(self, versions: dict[str, str | None], device: str) -> str:
        """The audit's finding: the first ``when`` entry that holds may say another."""
        for condition in self.conditions:
            if condition.holds(versions, device):
                return condition.audit or self.audit
        return self.audit


@dataclass(frozen=True)
class UsualCause:
    """A generic message (torch's own check, which never says why) this case is the usual cause
    of: explain names the case for it without another anchor; where `named` is given, only for
    a text that names one of those words too (a Half/Float clash is LoRA's only beside "lora"),
    and never for one that names a word of `unless_named` (an inference failure: "backward")."""

    pattern: str  # a regex, searched case-insensitively in the pasted line
    named: tuple[str, ...] = ()
    unless_named: tuple[str, ...] = ()
    variant: str = ""  # the variant whose cause explain shows ("": the one the message hit)


@dataclass(frozen=True)
class Case:
    name: str
    folder: Path
    title: str
    summary: str
    cause: str  # the root cause in one line (explain and the site show it)
    phrases: tuple[str, ...]  # how users describe the symptom ("black image"), for explain
    project: str
    issue: str
    family: str
    hazard: str  # the shared.hazards pattern its broken models show ("" if none)
    era: str
    era_start: datetime.date  # the first date the dated sweep runs the case on
    variants: tuple[Variant, ...]
    fix: str = ""  # the fix in one statement, where the broken/fixed diff cannot say it (explain)
    asks: str = ""  # the one question that tells this case from the others (explain's differential)
    usual_cause_of: tuple[UsualCause, ...] = ()

    def hazard_looked_for(self, audit: str) -> str:
        """The hazard kind an audit value is about: the kind it names, else the case's own."""
        return audit if audit in HAZARDS else self.hazard


def imported_packages(script: Path, seen: set[Path] | None = None) -> set[str]:
    """The top-level packages a script imports (not the standard library's, not ``shared``),
    followed through the sibling modules of its case folder that it imports."""
    seen = set() if seen is None else seen
    if script in seen:
        return set()
    seen.add(script)
    found = set()
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for top in {name.split(".")[0] for name in names}:
            sibling = script.parent / f"{top}.py"
            if sibling.is_file():
                found |= imported_packages(sibling, seen)
            elif top not in sys.stdlib_module_names and top != "shared":
                found.add(top)
    return found


def case_names(cases_dir: Path = CASES_DIR) -> list[str]:
    """Every folder under cases/ is a case (folders starting with '_' or '.' are not)."""
    return sorted(
        path.name
        for path in cases_dir.iterdir()
        if path.is_dir() and not path.name.startswith(("_", "."))
    )


def load_case(name: str, cases_dir: Path = CASES_DIR) -> Case:
    folder = cases_dir / name
    if not folder.is_dir():
        known = ", ".join(case_names(cases_dir))
        raise CaseError(f"unknown case {name!r}; known cases: {known}")
    metadata_path = folder / METADATA_FILE
    if not metadata_path.is_file():
        raise CaseError(f"{relative(folder)}: no {METADATA_FILE}; every case folder needs one")
    try:
        data = tomllib.loads(metadata_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CaseError(f"{relative(metadata_path)}: not valid TOML: {exc}") from None
    return _parse_case(name, folder, data, relative(metadata_path))


def _parse_case(name: str, folder: Path, data: dict, where: str) -> Case:
    _only_keys(data, set(CASE_KEYS), where)
    for key in ("title", "summary", "cause", "project", "issue", "family"):
        _need_str(data, key, where)
    phrases = data.get("phrases", [])
    if not isinstance(phrases, list) or not all(isinstance(p, str) and p for p in phrases):
        raise CaseError(f"{where}: phrases must be a list of non-empty strings")
    if data["family"] not in FAMILIES:
        raise CaseError(
            f"{where}: family must be one of {sorted(FAMILIES)} (to add one, extend FAMILIES "
            f"in shared/harness/catalog.py), got {data['family']!r}"
        )
    hazard = _optional_str(data, "hazard", where)
    if hazard and hazard not in HAZARDS:
        raise CaseError(f"{where}: hazard must be one of {sorted(HAZARDS)} (shared/hazards.py)")
    era_start = data.get("era_start")
    if type(era_start) is not datetime.date:
        raise CaseError(f"{where}: era_start = YYYY-MM-DD (a TOML date, no quotes) is required: "
                        "the first date the dated sweep runs the case on")  # fmt: skip
    case_requires = _parse_requirements(data.get("requires", {}), f"{where} [requires]")
    raw_variants = data.get("variant")
    if not isinstance(raw_variants, list) or not raw_variants:
        raise CaseError(f"{where}: needs at least one [[variant]] table")
    variants = tuple(
        _parse_variant(raw, folder, case_requires, f"{where} [[variant]] #{index + 1}")
        for index, raw in enumerate(raw_variants)
    )
    names = [variant.name for variant in variants]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise CaseError(f"{where}: variant names must be unique, repeated: {duplicated}")
    if not any(v.expectation.expect in FAILURES for v in variants):
        raise CaseError(f"{where}: a case needs at least one variant that fails: expect = "
                        f"{' / '.join(repr(kind) for kind in FAILURES)}")  # fmt: skip
    by_name = {variant.name: variant for variant in variants}
    for variant in variants:
        fixed = by_name.get(variant.fixes)
        if variant.fixes and (fixed is None or fixed.expectation.expect not in FAILURES):
            raise CaseError(
                f"{where} ({variant.name}): fixes = {variant.fixes!r} must "
                "name a failing variant (error / symptom / warning) of this case"
            )
        if variant.fixes and variant.expectation.expect != "pass":
            raise CaseError(f"{where} ({variant.name}): only a variant with expect = 'pass' "
                            "fixes another")  # fmt: skip
    if not any(v.expectation.expect == "pass" for v in variants):
        raise CaseError(f"{where}: a case needs at least one variant with expect = 'pass'")
    if any(v.audit_kinds - set(HAZARDS) for v in variants) and not hazard:
        raise CaseError(f"{where}: audit = 'flagged' / 'clean' needs the case's hazard = '<kind>'")
    return Case(
        name=name,
        folder=folder,
        title=data["title"],
        summary=data["summary"],
        cause=data["cause"],
        phrases=tuple(phrases),
        project=data["project"],
        issue=data["issue"],
        family=data["family"],
        hazard=hazard,
        era=data.get("era", ""),
        era_start=era_start,
        variants=variants,
        fix=_optional_str(data, "fix", where),
        asks=_optional_str(data, "asks", where),
        usual_cause_of=_parse_usual_causes(data.get("usual_cause_of", []), set(by_name), where),
    )


def _parse_usual_causes(raw: object, variants: set[str], where: str) -> tuple[UsualCause, ...]:
    where = f"{where} [[usual_cause_of]]"
    if not isinstance(raw, list) or not all(isinstance(entry, dict) for entry in raw):
        raise CaseError(f"{where}: one table per message: pattern = '<regex>', named = [...]")
    found = []
    for entry in raw:
        _only_keys(entry, set(USUAL_CAUSE_KEYS), where)
        pattern = _need_str(entry, "pattern", where)
        try:
            re.compile(pattern)
        except re.error as exc:
            raise CaseError(f"{where}: pattern {pattern!r} is not a valid regex: {exc}") from None
        words = {}
        for key in ("named", "unless_named"):
            listed = entry.get(key, [])
            if not isinstance(listed, list) or not all(isinstance(w, str) and w for w in listed):
                raise CaseError(f"{where}: {key} must be a list of non-empty words")
            words[key] = tuple(w.lower() for w in listed)
        variant = _optional_str(entry, "variant", where)
        if variant and variant not in variants:
            raise CaseError(f"{where}: variant {variant!r} is not a variant of this case")
        found.append(UsualCause(pattern, words["named"], words["unless_named"], variant))
    return tuple(found)


def _parse_variant(raw: dict, folder: Path, case_requires: Requirements, where: str) -> Variant:
    expectation_keys = set(EXPECTATION_KEYS)
    _only_keys(raw, set(VARIANT_KEYS), where)
    name = _need_str(raw, "name", where)
    where = f"{where} ({name})"
    script = folder / _need_str(raw, "script", where)
    if not script.is_file():
        raise CaseError(f"{where}: script {script} does not exist")
    expectation = _parse_expectation({k: raw[k] for k in expectation_keys if k in raw}, where)
    requires = _merge_requirements(
        case_requires, _parse_requirements(raw.get("requires", {}), f"{where} requires")
    )
    conditions = tuple(
        _parse_condition(entry, expectation, f"{where} when #{index + 1}")
        for index, entry in enumerate(raw.get("when", []))
    )
    timeout = raw.get("timeout", 300)
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise CaseError(f"{where}: timeout must be a positive number of seconds")
    launcher = raw.get("launcher", "python")
    if launcher not in LAUNCHERS:
        raise CaseError(f"{where}: launcher must be one of {LAUNCHERS}, got {launcher!r}")
    ranks = raw.get("ranks", 1)
    if not isinstance(ranks, int) or ranks < 1:
        raise CaseError(f"{where}: ranks must be a positive integer")
    return Variant(
        name=name,
        script=script,
        expectation=expectation,
        requires=requires,
        conditions=conditions,
        timeout=float(timeout),
        launcher=launcher,
        ranks=ranks,
        fixes=_optional_str(raw, "fixes", where),
        fix_changes=_fix_changes(raw, where),
        audit=_audit(raw, where),
    )


def _fix_changes(raw: dict, where: str) -> tuple[str, ...]:
    changes = raw.get("fix_changes", [])
    if changes and not raw.get("fixes"):
        raise CaseError(f"{where}: fix_changes needs fixes = '<the broken variant>'")
    if not isinstance(changes, list) or not all(
        isinstance(change, str) and FIX_CHANGE.fullmatch(change) for change in changes
    ):
        raise CaseError(
            f"{where}: fix_changes must be a list of 'adds <fact>' / 'drops <fact>', a fact "
            f"being a dtype, quantized:<Layer> or autocast:<dtype> (/{FIX_CHANGE.pattern}/), "
            f"got {changes!r}"
        )
    return tuple(changes)


def _audit(raw: dict, where: str) -> str:
    audit = _optional_str(raw, "audit", where)
    if audit and audit not in AUDITS and audit not in HAZARDS:
        raise CaseError(f"{where}: audit must be one of {AUDITS} or a hazard kind of "
                        f"shared/hazards.py, got {audit!r}")  # fmt: skip
    return audit


def _parse_expectation(raw: dict, where: str) -> Expectation:
    try:
        return Expectation.from_table(raw)
    except ValueError as exc:
        raise CaseError(f"{where}: {exc}") from None


def _parse_condition(raw: dict, base: Expectation, where: str) -> Condition:
    _only_keys(raw, set(WHEN_KEYS), where)
    overrides = {k: raw[k] for k in EXPECTATION_KEYS if k in raw}
    if not overrides and "audit" not in raw:
        raise CaseError(f"{where}: a 'when' entry must override something")
    if raw.get("device", "cpu") not in ("cpu", "cuda"):
        raise CaseError(f"{where}: device must be 'cpu' or 'cuda'")
    try:
        expectation = base.overridden(overrides)
    except ValueError as exc:
        raise CaseError(f"{where}: {exc}") from None
    return Condition(
        packages={p: _specifier(raw[p], where) for p in VERSIONED_PACKAGES if p in raw},
        device=raw.get("device", ""),
        expectation=expectation,
        audit=_audit(raw, where),
    )


def _parse_requirements(raw: dict, where: str) -> Requirements:
    if not isinstance(raw, dict):
        raise CaseError(f"{where}: must be a table")
    _only_keys(raw, set(REQUIRES_KEYS), where)
    cuda = raw.get("cuda", False)
    gpus = raw.get("gpus", 0)
    if not isinstance(cuda, bool) or not isinstance(gpus, int) or gpus < 0:
        raise CaseError(f"{where}: cuda must be true/false and gpus a whole number")
    tables = {}
    for key in ("packages", "cpu_packages"):
        table = raw.get(key, {})
        if not isinstance(table, dict):
            raise CaseError(f"{where}: {key} must be a table of name = 'specifier'")
        unknown = sorted(set(table) - set(VERSIONED_PACKAGES) - set(EXTRA_PACKAGES))
        if unknown:
            raise CaseError(
                f"{where}: {key} names unknown package(s) {unknown}; known: "
                f"{', '.join([*VERSIONED_PACKAGES, *EXTRA_PACKAGES])} (a new library: add it to "
                "VERSIONED_PACKAGES in shared/harness/catalog.py, then the harness records and "
                "checks its version; a package only some variants import: to EXTRA_PACKAGES)"
            )
        tables[key] = {name: _specifier(spec, where) for name, spec in table.items()}
    reason = raw.get("reason", "")
    keys = [f"{key}:{name}" for key, table in tables.items() for name in table]
    reasons = dict.fromkeys(keys + (["cuda"] if cuda or gpus else []), reason) if reason else {}
    return Requirements(cuda=cuda or gpus > 0, gpus=gpus, reasons=reasons, **tables)


def _merge_requirements(case: Requirements, variant: Requirements) -> Requirements:
    """The variant's table over the case's; each requirement keeps the reason of its table."""
    return Requirements(
        cuda=case.cuda or variant.cuda,
        gpus=max(case.gpus, variant.gpus),
        packages={**case.packages, **variant.packages},
        cpu_packages={**case.cpu_packages, **variant.cpu_packages},
        reasons={**case.reasons, **variant.reasons},
    )


def _specifier(text: object, where: str) -> SpecifierSet:
    try:
        return SpecifierSet(str(text))
    except InvalidSpecifier:
        raise CaseError(f"{where}: {text!r} is not a version specifier like '>=2.1'") from None


def _only_keys(raw: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise CaseError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def _optional_str(raw: dict, key: str, where: str) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise CaseError(f"{where}: '{key}' must be a string")
    return value


def _need_str(raw: dict, key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CaseError(f"{where}: '{key}' is required and must be a non-empty string")
    return value
