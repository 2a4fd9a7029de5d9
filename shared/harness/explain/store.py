"""The catalog explain reads: the cases' messages, words and subjects; the stored matrix, read
once per process."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from shared.harness.case import FAILURES, FAMILIES, Case
from shared.harness.catalog import case_names, load_case
from shared.harness.explain.text import (
    DTYPE_WORDS,
    MIN_CORRECTABLE,
    NOT_SUBJECT,
    literal,
    shape,
    stems,
    tokens,
)
from shared.harness.kinds import REPRODUCED
from shared.harness.matrix import all_rows, stored_bisections
from shared.harness.paths import MATRIX_DIR
from shared.hazards import NAMES_NOTHING

# Families a case may not exist for yet: their answers are given all the same.
EXTRA_FAMILIES = {
    "hardware": "a precision the device (or the installed torch build) cannot run",
    "meta-tensors": "parameters still on the meta device (never loaded) moved or copied",
}


@dataclass
class Signature:
    """One documented failure: a variant's expectation, base or on some versions or a device."""

    case: str
    variant: str
    where: str  # "" for the base expectation, else the `when` entry's versions or device
    error: str
    patterns: list[str]
    shapes: list[str]
    raised_in: str
    note: str = ""
    # Each message documented as ending there (`$`), as a raise line quotes it: its quote closing
    # right after. A raise line quoting more after it ("... (not {self.device.type!r})") is
    # another check's wording.
    ends: list[str] = field(default_factory=list)


@cache
def stored_runs(matrix_dir: Path = MATRIX_DIR) -> tuple[list, list]:
    """The stored matrix's rows and bisections, read once per process (every answer reads them)."""
    return all_rows(matrix_dir), stored_bisections(matrix_dir)


def signatures(cases: list[Case], matrix_dir: Path = MATRIX_DIR) -> list[Signature]:
    seen: dict[tuple[str, str], set[str]] = {}
    for row in stored_runs(matrix_dir)[0]:
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
                # a message that names no failure finds nothing (a kernel's assert)
                messages = [p for p in expectation.messages if not NAMES_NOTHING.search(literal(p))]
                if expectation.expect not in FAILURES or not messages:
                    continue
                texts = [literal(p) for p in messages]
                if not where:
                    texts += sorted(seen.get((case.name, variant.name), ()))
                found.append(Signature(
                    case=case.name, variant=variant.name, where=where,
                    error=expectation.error or expectation.warning,
                    patterns=[_unanchored(p) for p in messages],
                    shapes=sorted({shape(t) for t in texts if t}),
                    raised_in=expectation.raised_in or expectation.issued_in,
                    note=expectation.note,
                    ends=[_unanchored(p) + "[\"']" for p in messages if p.endswith("$")],
                ))  # fmt: skip
    return found


def _unanchored(pattern: str) -> str:
    """A documented regex found anywhere in a line, its final full stop optional (often lost),
    and its quotes too (users and titles drop them: `slow_conv2d_cpu not implemented for 'half`)."""
    pattern = re.sub(r"(\\[.!])?\$?$", "", pattern.removeprefix("^"))
    return re.sub(r"(?<!\\)([\"'])", r"\1?", pattern) + r"[.!]?"


def subject(case: Case) -> list[list[str]]:
    """The names the title gives before its colon, each as the spellings that stand for it:
    SDXL; T5; gemma3; Chroma; CogAgent-VQA: cogagent or vqa; names joined by " / " are one name
    (MiniCPM-V-2 / OmniLMM). A name is a word with a capital past its first letter or a digit, or
    a capitalised word past the head's first: libraries, dtypes and common words ("under
    autocast", "with gradient accumulation") name nothing a paste must say."""
    head = re.sub(r"\b([A-Za-z]{3,}) (\d)\b", r"\1\2", case.title.split(":", 1)[0])
    names = []
    for position, compound in enumerate(re.split(r"[\s/+]+", head)):
        if not (re.search(r"[A-Za-z][A-Za-z0-9]*[A-Z0-9]", compound)
                or (compound[:1].isupper() and position)):  # fmt: skip
            continue
        parts = {re.sub(r"(?<=[a-z])1$", "", w.lower())  # FSDP1: fsdp
                 for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", compound)}  # fmt: skip
        parts = sorted(w for w in parts - NOT_SUBJECT if len(w) > 1)
        if len(parts) > 1:  # InternLM-XComposer2-VL: "vl" alone names many models
            parts = [w for w in parts if len(w) > 2] or parts
        if parts and parts not in names:
            names.append(parts)
    if " / " in head and names:  # MiniCPM-V-2 / OmniLMM: either name
        return [sorted({w for parts in names for w in parts})]
    return names


def names_subject(names: list[list[str]], words: set[str]) -> bool:
    """Every name of the subject is in the words, in one of its spellings."""
    return all(set(spellings) & words for spellings in names)


def application_project(case: Case) -> str:
    owner, _, name = case.project.split(" ")[0].partition("/")
    return "" if owner.lower() in ("huggingface", "pytorch") or not name else name.lower()


def readme_text(case: Case) -> str:
    readme = case.folder / "README.md"
    return readme.read_text(encoding="utf-8") if readme.exists() else ""


@dataclass
class Catalog:
    """Everything explain needs, built once from the cases."""

    cases: dict[str, Case]
    signatures: list[Signature]
    vocabulary: list[str]  # the documented messages' words, for spelling correction
    case_docs: dict[str, list[str]]
    subjects: dict[str, list[list[str]]]
    projects: dict[str, str]  # the application project's name ("" for a library's)
    phrase_words: dict[str, set[str]]  # the symptom phrases' words, dtypes left out
    without_nan: set[str]  # cases whose symptom is explicitly no NaN ("no error, no NaN: ...")


def family_description(family: str) -> str:
    return FAMILIES.get(family) or EXTRA_FAMILIES.get(family, "")


def build_catalog(cases: list[Case], matrix_dir: Path = MATRIX_DIR) -> Catalog:
    sigs = signatures(cases, matrix_dir)
    vocabulary = sorted({w.lower() for s in sigs for p in s.patterns
                         for w in re.findall(r"[A-Za-z][A-Za-z0-9_]{%d,}" % (MIN_CORRECTABLE - 1),
                                             literal(p))})  # fmt: skip
    case_docs = {}
    for case in cases:
        words = " ".join([case.title, case.cause, case.summary, *case.phrases, *case.phrases,
                          case.fix, readme_text(case)[:3000]])  # fmt: skip
        case_docs[case.name] = tokens(words)
    subjects = {case.name: subject(case) for case in cases}
    projects = {c.name: application_project(c) for c in cases}
    phrase_words = {c.name: stems(tokens(" ".join(c.phrases))) - DTYPE_WORDS for c in cases}
    without_nan = {c.name for c in cases if NO_NAN.search(c.summary.split(":", 1)[0])}
    return Catalog({c.name: c for c in cases}, sigs, vocabulary, case_docs, subjects, projects,
                   phrase_words, without_nan)  # fmt: skip


NO_NAN = re.compile(r"\bno nan\b", re.IGNORECASE)  # in a summary's lead clause


@cache
def _bm25(docs_key: tuple[tuple[str, tuple[str, ...]], ...]):
    import bm25s  # noqa: PLC0415 (a retrieval index is only needed for a symptom)

    retriever = bm25s.BM25()
    retriever.index([list(doc) for _, doc in docs_key], show_progress=False)
    return retriever


def bm25_scores(docs: dict[str, list[str]], query: list[str]) -> dict[str, float]:
    key = tuple((name, tuple(doc)) for name, doc in sorted(docs.items()))
    retriever = _bm25(key)
    known = [t for t in query if t in retriever.vocab_dict]
    if not known:
        return {name: 0.0 for name, _ in key}
    scores = retriever.get_scores(known)
    return {name: float(score) for (name, _), score in zip(key, scores, strict=True)}


def bm25_table(docs: dict[str, list[str]]) -> dict:
    """A BM25 index as the site reads it: each term's score in each document (bm25s's own)."""
    key = tuple((name, tuple(doc)) for name, doc in sorted(docs.items()))
    retriever = _bm25(key)
    scores = retriever.scores
    terms = {}
    for term, column in retriever.vocab_dict.items():
        if not term or column + 1 >= len(scores["indptr"]):
            continue  # bm25s's empty placeholder term
        start, end = scores["indptr"][column], scores["indptr"][column + 1]
        terms[term] = [[int(d), float(v)] for d, v in
                       zip(scores["indices"][start:end], scores["data"][start:end], strict=True)]
    return {"names": [name for name, _ in key], "terms": terms}


@cache
def default_catalog() -> Catalog:
    return build_catalog([load_case(name) for name in case_names()])
