"""A case's fix as code: the first statement its fixed script adds to its broken one. Both layers
print it: ``explain`` (the harness) beside the case it names, the diagnosis of a user's script
(``shared.culprit``) beside the case that documents the mechanism it found."""

import difflib
from pathlib import Path

QUOTES = ('"' * 3, "'" * 3)


def added_statement(broken: Path, fixed: Path) -> str:
    """The first statement of code the ``fixed`` script adds to the ``broken`` one: no comment,
    import or docstring line; its continuation lines joined (brackets balanced)."""
    old, new = (script.read_text(encoding="utf-8").splitlines() for script in (broken, fixed))
    added = [line[1:].strip() for line in difflib.unified_diff(old, new, lineterm="", n=0)
             if line.startswith("+") and not line.startswith("+++")]  # fmt: skip
    code = [line for line in added if line and not line.endswith(QUOTES)
            and not line.startswith(("#", "from ", "import ", *QUOTES))]  # fmt: skip
    return first_statement(code)


def first_statement(lines: list[str]) -> str:
    """The first statement of the added code, its continuation lines joined (brackets balanced)."""
    statement, depth = [], 0
    for line in lines:
        code = line.partition("  # ")[0]  # a continuation line's comment left out
        statement.append(line if not depth and not statement else code)
        depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
        if depth <= 0:
            break
    return " ".join(statement)
