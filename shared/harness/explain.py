"""From a symptom to its case: which documented failures an error, a traceback or a phrase is.

    python -m shared.harness explain "RuntimeError: mat1 and mat2 must have the same dtype ..."
    python -m shared.harness explain --file traceback.txt      (or - for standard input)
    nox -s explain -- "black image"

Matches the text against every failure the cases document — the message patterns of each
variant's `case.toml` expectation and its `when` entries (so the per-version and CUDA wordings
too), the messages the matrix actually saw, the cases' symptom `phrases` — and ranks them:

- the message matches a documented pattern exactly (``MESSAGE``);
- the message has the same shape once dtype, device and number words are masked (``SHAPE``): a
  held-out wording of the same failure, e.g. another dtype pair;
- the text is a symptom phrase of a case, or a piece of a documented message (``PHRASE``);
- a traceback's frames include the documented raise site, its type is the documented one, the
  text names the case's application project (MiniCPM-V, CogVLM, ...: not a library every
  traceback passes through) — each adds to the rank.

Cases that document the very same message rank equally on a bare error line: the answer then
says they are tied, and that a traceback's frames would tell them apart.

Exit 0 with matches, 1 with none (the closest cases are named), 2 on bad input. The site's search
box runs the same rules over the same data (``catalog_index``), exported at build time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from shared.harness.catalog import FAILURES, Case, case_names, load_case
from shared.harness.matrix import all_rows, flip_text, flips, stored_bisections
from shared.harness.paths import MATRIX_DIR
from shared.harness.report import REPRODUCED

MESSAGE, SHAPE, PHRASE = 100, 60, 40  # the tiers of a match
RAISE_SITE_BONUS, PROJECT_BONUS, TYPE_BONUS = 10, 8, 5
# Owners of the libraries themselves: a traceback passes through them whatever the case.
LIBRARY_OWNERS = ("huggingface", "pytorch")
MIN_PHRASE_CHARACTERS = 6  # a shorter query is no phrase (it would be part of everything)
CLOSEST = 3

# Words that name a dtype or a device: masked so that another pair of them matches the shape.
_DTYPE_WORDS = re.compile(
    r"(?:struct\s+)?(?:c10::)?(?:complex)?(?:b?float(?:16|32|64)?|half|double|bfloat16|"
    r"fp16|bf16|fp32|int(?:8|16|32|64)?|long|bool|byte)\b|"
    r"torch\.(?:cuda\.)?\w+tensor|\b(?:cuda|cpu|meta|mps|xpu)(?::\d+)?\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b", re.IGNORECASE)
_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\S+)')
_FINAL_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt)): ?(.*)$")


def shape(message: str) -> str:
    """A message with dtype, device and number words masked, case and spacing folded."""
    masked = _NUMBER.sub("#", _DTYPE_WORDS.sub("~", message.lower()))
    return " ".join(masked.split())


def literal(pattern: str) -> str:
    """A documented regex as the plain text it matches (optional groups dropped)."""
    text = re.sub(r"\((?:[^()\\]|\\.)*\)\?", "", pattern)  # (struct )? and the like
    text = re.sub(r"\(\\d\+\)|\\d\+|\\\d", "1", text)  # numbers and their backreferences
    text = text.removeprefix("^").removesuffix("$")
    return re.sub(r"\\(.)", r"\1", text)


@dataclass
class Signature:
    """One documented failure: a variant's expectation on some versions or a device."""

    case: str
    variant: str
    kind: str  # error / warning / symptom
    where: str  # "" for the base expectation, else the `when` entry's versions or device
    error: str  # the exception type or warning category
    patterns: list[str]
    shapes: list[str]  # of the patterns' texts and of the messages the matrix saw
    raised_in: str
    phrases: list[str] = field(default_factory=list)
    project: str = ""  # the application's repository name, lowercase ("" for a library's)


@dataclass
class Query:
    text: str
    error: str  # the final exception's type, when the text names one
    message: str
    frames: list[str]  # "path:function", as the harness records frames


def parse(text: str) -> Query:
    """The final exception of a traceback (or an error line, or a phrase) and its frames."""
    frames = [
        f"{_site_packages_relative(path)}:{function}" for path, function in _FRAME.findall(text)
    ]
    error, message = "", text.strip()
    for line in reversed([line.strip() for line in text.strip().splitlines()]):
        found = _FINAL_LINE.match(line)
        if found:
            error, message = found.group(1).rsplit(".", 1)[-1], found.group(2)
            break
    return Query(text=text.strip(), error=error, message=message, frames=frames)


def _site_packages_relative(path: str) -> str:
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def signatures(cases: list[Case], matrix_dir: Path = MATRIX_DIR) -> list[Signature]:
    seen: dict[tuple[str, str], set[str]] = {}
    for row in all_rows(matrix_dir):
        if row.verdict == REPRODUCED and ": " in row.message:
            seen.setdefault((row.case, row.variant), set()).add(row.message.split(": ", 1)[1])
    found = []
    for case in cases:
        for variant in case.variants:
            entries = [("", variant.expectation)]
            for condition in variant.conditions:
                where = ", ".join(f"{k} {v}" for k, v in condition.packages.items())
                entries.append((where or f"on {condition.device}", condition.expectation))
            for where, expectation in entries:
                if expectation.expect not in FAILURES:
                    continue
                texts = [literal(p) for p in expectation.messages]
                if not where:  # the matrix's messages are those of the base expectation mostly
                    texts += sorted(seen.get((case.name, variant.name), ()))
                found.append(
                    Signature(
                        case=case.name,
                        variant=variant.name,
                        kind=expectation.expect,
                        where=where,
                        error=expectation.error or expectation.warning,
                        patterns=list(expectation.messages),
                        shapes=sorted({shape(t) for t in texts if t}),
                        raised_in=expectation.raised_in or expectation.issued_in,
                        phrases=[*case.phrases, expectation.symptom]
                        if expectation.symptom
                        else list(case.phrases),
                    )
                )
    return found


def application_project(case: Case) -> str:
    """The repository name of the case's project when it is an application (not a library)."""
    owner, _, name = case.project.split(" ")[0].partition("/")
    return "" if owner.lower() in LIBRARY_OWNERS or not name else name.lower()


def score(signature: Signature, query: Query) -> tuple[int, str]:
    """(rank, how it matched); rank 0: no match."""
    tier, how = 0, ""
    if query.message and any(re.search(p, query.message) for p in signature.patterns):
        tier, how = MESSAGE, "message"
    elif query.message and shape(query.message) in signature.shapes:
        tier, how = SHAPE, "same message, other dtypes or devices"
    else:
        wanted = shape(query.message)
        phrases = [shape(p) for p in signature.phrases]
        if len(wanted) >= MIN_PHRASE_CHARACTERS and (
            any(wanted in s for s in signature.shapes)
            or any(wanted in p or p in wanted for p in phrases if len(p) >= MIN_PHRASE_CHARACTERS)
        ):
            tier, how = PHRASE, "symptom phrase"
    if not tier:
        return 0, ""
    if signature.raised_in and any(re.search(signature.raised_in, f) for f in query.frames):
        tier, how = tier + RAISE_SITE_BONUS, how + " + raise site"
    if signature.project and signature.project in query.text.lower():
        tier, how = tier + PROJECT_BONUS, how + " + project named"
    if query.error and query.error == signature.error.rsplit(".", 1)[-1]:
        tier, how = tier + TYPE_BONUS, how + " + type"
    return tier, how


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z][a-z0-9_]{2,}", shape(text)))


def closest(signatures_: list[Signature], cases: dict[str, Case], query: Query) -> list[str]:
    """Cases by word overlap with the query: what to suggest when nothing matched."""
    wanted = _words(query.text)
    overlap: dict[str, float] = {}
    for signature in signatures_:
        words = set().union(*(_words(s) for s in signature.shapes + signature.phrases), set())
        words |= _words(cases[signature.case].summary)
        if wanted and words:
            share = len(wanted & words) / len(wanted | words)
            overlap[signature.case] = max(overlap.get(signature.case, 0.0), share)
    ranked = sorted(overlap, key=lambda name: (-overlap[name], name))
    return [name for name in ranked if overlap[name] > 0][:CLOSEST]


@dataclass
class Match:
    case: str
    variant: str
    rank: int
    how: str
    where: str


def explain(text: str, cases: list[Case], matrix_dir: Path = MATRIX_DIR) -> list[Match]:
    query = parse(text)
    best: dict[str, Match] = {}
    for signature in signatures(cases, matrix_dir):
        rank, how = score(signature, query)
        if rank and (signature.case not in best or rank > best[signature.case].rank):
            best[signature.case] = Match(signature.case, signature.variant, rank, how,
                                         signature.where)  # fmt: skip
    return sorted(best.values(), key=lambda m: (-m.rank, m.case))


def first_place(matches: list[Match]) -> list[Match]:
    """The matches that share the best rank: one case, or several the text cannot tell apart."""
    return [m for m in matches if m.rank == matches[0].rank] if matches else []


def fix_of(case: Case, broken: str) -> tuple[str, str]:
    """The first variant that fixes ``broken`` and the key line of their diff."""
    import difflib

    fixed = next((v for v in case.variants if v.fixes == broken), None)
    if fixed is None:
        fixed = next((v for v in case.variants if v.fixes), None)
    if fixed is None:
        return "", ""
    scripts = {v.name: v.script for v in case.variants}
    old = scripts[fixed.fixes].read_text(encoding="utf-8").splitlines()
    new = fixed.script.read_text(encoding="utf-8").splitlines()
    added = [line[1:].strip() for line in difflib.unified_diff(old, new, lineterm="", n=0)
             if line.startswith("+") and not line.startswith("+++")]  # fmt: skip
    quotes = ('"' * 3, "'" * 3)  # docstring lines are prose, not the fix
    code = [
        line
        for line in added
        if line
        and not line.startswith(("#", "from ", "import ", *quotes))
        and not line.endswith(quotes)
    ]
    return fixed.name, (code or added or [""])[0]


def versions_of(case: str, variant: str, matrix_dir: Path = MATRIX_DIR) -> str:
    """Where the failure exists, from the matrix: its flips, else the stacks that reproduced it."""
    rows = [row for row in all_rows(matrix_dir) if (row.case, row.variant) == (case, variant)]
    for flip in flips(rows, stored_bisections(matrix_dir)):
        return flip_text(flip)
    reproduced = [row.set for row in rows if row.verdict == REPRODUCED]
    if reproduced:
        return f"reproduced on every stored stack that ran it ({len(reproduced)} sets)"
    return "not in the stored matrix yet"


def describe(match: Match, case: Case, matrix_dir: Path = MATRIX_DIR) -> str:
    fixed, key_line = fix_of(case, match.variant)
    where = f" (documented on {match.where})" if match.where else ""
    lines = [
        f"{case.name}: {case.title}",
        f"  matched: {match.variant}{where}, by {match.how}",
        f"  cause: {case.cause}",
        f"  fix: {fixed}: {key_line}" if fixed else "  fix: none declared",
        f"  versions: {versions_of(case.name, match.variant, matrix_dir)}",
        f"  upstream: {case.issue}",
        f"  run it: nox -s case-{case.name}",
    ]
    return "\n".join(lines)


def catalog_index(cases: list[Case], matrix_dir: Path = MATRIX_DIR) -> str:
    """What the site's search box needs, as JSON: the signatures and each case's answer."""
    answers = {}
    for case in cases:
        failing = next(v.name for v in case.variants if v.expectation.expect in FAILURES)
        fixed, key_line = fix_of(case, failing)
        answers[case.name] = {"title": case.title, "cause": case.cause, "fix": fixed,
                              "fix_line": key_line}  # fmt: skip
    return json.dumps(
        {
            "tiers": {
                "message": MESSAGE,
                "shape": SHAPE,
                "phrase": PHRASE,
                "raise_site": RAISE_SITE_BONUS,
                "type": TYPE_BONUS,
                "min_phrase": MIN_PHRASE_CHARACTERS,
            },  # fmt: skip
            "signatures": [asdict(s) for s in signatures(cases, matrix_dir)],
            "cases": answers,
        }
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="an error message, a traceback or a phrase")
    parser.add_argument("--file", help="read the text from this file (- for standard input)")
    parser.set_defaults(handler=explain_command)


def explain_command(args: argparse.Namespace) -> int:
    if args.file:
        try:
            text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
        except OSError as exc:
            print(f"explain: error: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
            return 2
    else:
        text = args.text or ""
    if not text.strip():
        print("explain: error: give an error message, a traceback (--file F, or - for stdin) "
              "or a symptom phrase", file=sys.stderr)  # fmt: skip
        return 2
    cases = {name: load_case(name) for name in case_names()}
    matches = explain(text, list(cases.values()))
    if not matches:
        near = closest(signatures(list(cases.values())), cases, parse(text))
        print("no documented case; closest: " + (", ".join(near) or "none"))
        return 1
    tied = first_place(matches)
    if len(tied) > 1:
        names = ", ".join(match.case for match in tied)
        print(f"{len(tied)} cases match equally well ({names}): they document the same "
              "message; a whole traceback's frames would tell them apart.\n")  # fmt: skip
    print("\n\n".join(describe(match, cases[match.case]) for match in matches))
    return 0
