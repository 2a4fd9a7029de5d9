"""Step 6, answer: the printed answer (a case, a differential, no documented case)."""

from __future__ import annotations

from pathlib import Path

from shared.fixes import added_statement
from shared.harness.case import FAILURES, Case
from shared.harness.explain.answer import Answer
from shared.harness.explain.differential import DIAGNOSE
from shared.harness.explain.frames import affected
from shared.harness.explain.messages import says_message
from shared.harness.explain.store import Catalog, family_description, stored_runs
from shared.harness.explain.text import canonical, pasted_versions
from shared.harness.kinds import REPRODUCED
from shared.harness.matrix import flip_text, flips
from shared.harness.paths import MATRIX_DIR

GUARD_LINES = {
    "nan": ("from shared.culprit import NonFiniteGuard   # the gallery's shared/culprit/",
            "with NonFiniteGuard(model, gradients=True) as guard: step(batch)   # forward, backward",
            "print(found.describe() if (found := guard.first or guard.first_gradient) else 'none')"),
    "mix": ("from shared.culprit import MismatchGuard   # the gallery's shared/culprit/",
            "with MismatchGuard(model) as guard: loss = step(batch)   # your forward",
            "print(guard.first.describe() if guard.first else 'no dtype/device mismatch')"),
}  # fmt: skip


# ---- the printed answer ---------------------------------------------------------------------


def fix_statement(case: Case, broken: str) -> tuple[str, str]:
    """The fixing variant and the fix: the declared one, else the diff's added code lines."""
    fixed = next((v for v in case.variants if v.fixes == broken), None) or next(
        (v for v in case.variants if v.fixes), None)  # fmt: skip
    if case.fix:
        return (fixed.name if fixed else ""), case.fix
    if fixed is None:
        return "", ""
    scripts = {v.name: v.script for v in case.variants}
    return fixed.name, added_statement(scripts[fixed.fixes], fixed.script)


def versions_of(case: str, variant: str, matrix_dir: Path = MATRIX_DIR) -> str:
    stored, bisections = stored_runs(matrix_dir)
    rows = [row for row in stored if (row.case, row.variant) == (case, variant)]
    for flip in flips(rows, bisections):
        return flip_text(flip).split(";")[0].split(" [")[0]  # the first clause
    if any(row.verdict == REPRODUCED for row in rows):
        return "reproduced on every stored stack that ran it"
    return "not in the stored matrix yet"


RUN_DIAGNOSE = f"  run it under diagnose: {DIAGNOSE} (names the module and the case on your run)"


def not_failing(case: Case) -> dict[str, list[list[list[str]]]]:
    """Per variant, the `when` entries documented as not failing: [package, specifier] each (the
    site's search box reads versions against them as affected() does)."""
    return {v.name: [[[name, str(spec)] for name, spec in c.packages.items()]
                     for c in v.conditions
                     if c.expectation.expect not in FAILURES and c.packages]
            for v in case.variants}  # fmt: skip


def describe(found: Answer, catalog: Catalog, text: str, matrix_dir: Path = MATRIX_DIR) -> str:
    if found.kind == "none":  # and why no family either
        return f"no documented case; closest: none\n  {found.sureness}\n" + RUN_DIAGNOSE
    if found.kind == "family":
        return describe_family(found)
    if found.kind == "differential":
        return describe_differential(found, catalog)
    case = catalog.cases[found.name]
    variant = next(v for v in case.variants if v.name == found.variant) if found.variant else next(
        v for v in case.variants if v.expectation.expect in FAILURES)  # fmt: skip
    fixed, fix = fix_statement(case, variant.name)
    cause = variant_note(case, found.variant) if found.variant else case.cause
    where = versions_of(case.name, variant.name, matrix_dir)
    mine = affected(case, variant.name, pasted_versions(text))
    lines = [
        f"{case.name}: {case.title}",
        f"  how sure: {found.sureness}" + (f" (the wording {found.where})" if found.where else ""),
        f"  cause ({variant.name}): {cause}",
        f"  fix ({fixed}): {fix}" if fix else "  fix: none declared",
    ]
    for other in other_triggers(case, variant.name, found.matched, catalog):
        other_fixed, other_fix = fix_statement(case, other)
        lines.append(f"  or ({other}): {variant_note(case, other)}"
                     + (f"; fix ({other_fixed}): {other_fix}" if other_fix else ""))
    lines += [
        f"  where: {where}" + (f"; {mine}" if mine else ""),
        f"  upstream: {case.issue}",
        f"  run it: nox -s case-{case.name}",
    ]
    if found.candidates:
        lines.append("  also documents this message: " + ", ".join(found.candidates))
    return "\n".join(lines)


def other_triggers(case: Case, shown: str, line: str, catalog: Catalog) -> list[str]:
    """The case's other failing variants whose documented message is the pasted one: the same
    message from another trigger (a meta skeleton moved, a disk layer moved, keys the checkpoint
    lacks), each with its own fix; the paste does not say which."""
    if not line:
        return []
    plain = canonical(line)
    found = []
    for sig in catalog.signatures:
        if (sig.case == case.name and sig.variant not in (shown, *found)
                and says_message(sig, plain)):
            found.append(sig.variant)
    return found


# What differs between a message and the documented one of the same wording, by family.
OTHER_OPERANDS = {"device-placement": "other tensors or devices"}


def describe_differential(found: Answer, catalog: Catalog) -> str:
    """No claim: each candidate, the check that tells it apart, the command that settles it."""
    lines = [f"no case claimed ({found.sureness}); it may be one of these, each told apart by "
             "one check:"]  # fmt: skip
    for number, (name, question) in enumerate(zip(found.candidates, found.questions,
                                                  strict=False), 1):
        lines += [f"  {number}. {name}: {catalog.cases[name].title}", f"     check: {question}"]
        if number == 1 and found.variant:  # a leading usual cause's own way round
            note = variant_note(catalog.cases[name], found.variant)
            lines.append(f"     usually ({found.variant}): {note}")
    if more := found.candidates[len(found.questions):]:
        lines.append("  also documented with this message: " + ", ".join(more))
    if found.family:
        lines.append(f"  family {found.family}: {family_description(found.family)}")
    lines.append(RUN_DIAGNOSE)
    return "\n".join(lines)


def variant_note(case: Case, name: str) -> str:
    """A variant's one-line note (what it sets up and how it fails), else the case's cause."""
    variant = next(v for v in case.variants if v.name == name)
    return variant.expectation.note or case.cause


def describe_family(found: Answer) -> str:
    family = found.name
    guard = GUARD_LINES["nan" if family == "overflow" else "mix"]
    lines = [f"no documented case; closest family {family}: {family_description(family)} "
             f"({found.sureness})"]  # fmt: skip
    if found.candidates:
        label = ("documented with this message" if found.matched else
                 f"documented with its wording, {OTHER_OPERANDS.get(family, 'other dtypes')}"
                 if found.by_wording else "cases of this family")  # fmt: skip
        lines.append(f"  {label}: " + ", ".join(found.candidates))
    if family in ("dtype-mix", "device-placement", "overflow"):
        lines.append("  find which on your model: wrap one step, the report names the module:")
        lines += [f"      {line}" for line in guard]
    if family == "overflow":
        lines.append("  then compute that module in bfloat16 or float32 (bf16 keeps float32's range)")
    if family == "unsupported-dtype":
        lines.append("  run that op in a dtype it has: float32 where a half kernel is missing (on "
                     "the CPU); bfloat16 / float16 where a kernel takes only those "
                     "(flash-attention: load with torch_dtype=torch.bfloat16)")  # fmt: skip
    if family == "hardware":
        lines.append("  check torch.cuda.is_available() and torch.cuda.is_bf16_supported(); "
                     "use float16 or float32 where they are False")  # fmt: skip
    lines.append(RUN_DIAGNOSE)
    return "\n".join(lines)
