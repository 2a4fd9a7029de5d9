"""The catalog: find the case folders under ``cases/`` and load each one's ``case.toml``.

Loading validates everything up front (``shared.harness.case``: unknown keys, bad regexes,
missing scripts, bad version specifiers), so a typo in a case file is a clear error instead of
a silently green run. This module imports no torch: nox and the CLI use it before any heavy
import.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

from shared.harness.case import Case, CaseError, parse_case
from shared.harness.paths import CASES_DIR, relative

METADATA_FILE = "case.toml"


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
    return parse_case(name, folder, data, relative(metadata_path))
