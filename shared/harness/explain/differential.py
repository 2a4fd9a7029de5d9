"""Step 5, differential: the candidates the evidence leaves, each with its check; else the
closest family (no documented case)."""

from __future__ import annotations

import re

from shared.harness.case import Case
from shared.harness.explain.answer import Answer, Hit
from shared.harness.explain.claims import UsualFound
from shared.harness.explain.messages import same_wording
from shared.harness.explain.parse import Paste
from shared.harness.explain.store import Catalog, bm25_scores, names_subject
from shared.harness.explain.text import (
    DESCRIPTION_WHY,
    NAMES_NOTHING_WHY,
    QUANTIZED_BASE,
    QUANTIZED_WHY,
    SD_TOOLS,
    SD_VERSIONS,
    SYMPTOM_MIN_SCORE,
    TRAINING_NAN_WHY,
    TRAINING_WORDS,
    UNKNOWN_ERROR_WHY,
    message_family,
    stems,
)
from shared.hazards import NAMES_NOTHING


def differential(paste: Paste, hits: list[Hit], usual: UsualFound | None,
                 catalog: Catalog) -> Answer:  # fmt: skip
    """No claim: the cases the evidence leaves (at most three, each with the check that tells
    it apart; a usual cause that does not decide first), else no documented case and the
    closest family."""
    leader = usual.case if usual and not usual.cause.decides else ""
    if hits or leader:  # a generic message, or a documented one something contradicts
        line = usual.line if leader else hits[0].line
        family, _ = message_family(line)
        family = family or catalog.cases[hits[0].case if hits else leader].family
        family = "" if family == "dtype-mix" and _quantized(paste) else family
        # The usual cause of a message with others first; then the cases documenting this very
        # message before those documenting its shape, each group by the paste's other words
        # (its paths, its model's names).
        scores = bm25_scores(catalog.case_docs, paste.query)
        exact = sorted({h.case for h in hits if h.how == "message"}, key=lambda n: (-scores[n], n))
        ranked = exact + sorted({h.case for h in hits} - set(exact), key=lambda n: (-scores[n], n))
        contradicted = next((h.contradicted for h in hits if h.contradicted), "")
        if leader:
            ranked = [leader] + [name for name in ranked if name != leader]
        why = (f"documented message, but {contradicted}" if contradicted else
               LEADS_WHY if leader else
               "a generic message: it names the clash, never its cause")  # fmt: skip
        found = _differential_answer(ranked, why, family, line, catalog)
        # the variant a leading declaration names: which way round (the model never moved)
        found.variant = usual.cause.variant if leader else ""
        return found
    for line in paste.lines:
        family, _ = message_family(line)
        if family == "dtype-mix" and _quantized(paste):  # quantization's, or a plain mix
            return Answer("none", "", QUANTIZED_WHY, step="abstain")
        if family:  # no case documents this message: its family's cases would mislead
            found = _family_answer(family, "its message", catalog)
            found.candidates = same_wording(line, catalog)
            found.by_wording = True
            return found
    if any(NAMES_NOTHING.search(line) for line in paste.lines):  # any family would be a guess
        return Answer("none", "", NAMES_NOTHING_WHY, step="abstain")
    unknown_error = bool(paste.last_exception)
    scores = bm25_scores(catalog.case_docs, paste.query)
    ranked = sorted(scores, key=lambda n: (-scores[n], n))
    present, said = set(paste.query), stems(paste.query)
    if SD_TOOLS & present and not SD_VERSIONS & present:  # an SD tool, its version unnamed
        present |= SD_VERSIONS
    # A NaN in the paste rules out a case whose symptom is no NaN at all.
    ruled_out = catalog.without_nan if "nan" in said else set()
    # A case whose mechanism the description states (a module kept in a list) comes first, on
    # any model; the others by their words, among those whose subject it names.
    described = [name for name in ranked if name not in ruled_out
                 and describes(catalog.cases[name], paste.text)]  # fmt: skip
    by_words = [
        name for name in ranked[:DIFFERENTIAL_POOL] if scores[name] >= SYMPTOM_MIN_SCORE
        and name not in ruled_out and name not in described
        and (not catalog.subjects[name] or names_subject(catalog.subjects[name], present))
        and catalog.phrase_words[name] & said]  # fmt: skip
    candidates = [] if unknown_error else (described + by_words)[:DIFFERENTIAL_SIZE]
    if candidates:  # symptom words decide no family either: each candidate says its own
        return _differential_answer(candidates, "symptom words (they never decide alone)", "",
                                    "", catalog)
    # Words decide no family, as they decide no case: only a message does (above).
    if unknown_error:
        return Answer("none", "", UNKNOWN_ERROR_WHY, step="abstain")
    training_nan = "nan" in said and TRAINING_WORDS & said
    return Answer("none", "", TRAINING_NAN_WHY if training_nan else DESCRIPTION_WHY, step="abstain")


# A message one case is the usual cause of, but not the only common one.
LEADS_WHY = "a generic message with several common causes: the usual one first"
DIFFERENTIAL_SIZE = DIFFERENTIAL_POOL = 3  # at most three candidates, of the three best
DIAGNOSE = "nox -s diagnose -- your_script.py"  # settles it on the user's own run


def _quantized(paste: Paste) -> bool:
    """The paste speaks of a quantized base: a generic dtype clash is then no family's to name."""
    return bool(QUANTIZED_BASE.search(paste.text.lower()))


def _differential_answer(ranked: list[str], why: str, family: str, line: str,
                         catalog: Catalog) -> Answer:  # fmt: skip
    """The first three, each with its check; any further case documenting the very message is
    named after them, without one (the list is whole, the told-apart part short)."""
    questions = [asks(catalog.cases[name]) for name in ranked[:DIFFERENTIAL_SIZE]]
    return Answer("differential", family, why, matched=line, candidates=ranked, family=family,
                  questions=questions, step="differential")


def describes(case: Case, text: str) -> bool:
    """The description states the case's mechanism in words one of its `describes` finds."""
    return any(re.search(pattern, text, re.IGNORECASE) for pattern in case.describes)


def asks(case: Case) -> str:
    """The check that tells this case apart: its declared `asks`, else its title as a question."""
    if case.asks:
        return case.asks
    head, _, rest = case.title.partition(": ")
    return f"{head}? {rest}?" if rest else f"{head}?"


def _family_answer(family: str, why: str, catalog: Catalog) -> Answer:
    """No documented case: the family its message names, and its cases."""
    members = sorted(n for n, c in catalog.cases.items() if c.family == family)
    return Answer("family", family, f"family, by {why}", candidates=members, family=family,
                  step="abstain")
