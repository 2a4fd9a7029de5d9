"""Step 5, differential: the candidates the evidence leaves, each with its check; else the
closest family (no documented case)."""

from __future__ import annotations

from shared.harness.case import Case
from shared.harness.explain.answer import Answer, Hit
from shared.harness.explain.messages import same_wording
from shared.harness.explain.parse import Paste
from shared.harness.explain.store import Catalog, bm25_scores, names_subject
from shared.harness.explain.text import (
    FAMILY_MIN_SCORE,
    NAMES_NOTHING_WHY,
    SYMPTOM_MIN_SCORE,
    TRAINING_NAN_WHY,
    TRAINING_WORDS,
    message_family,
    stems,
)
from shared.hazards import NAMES_NOTHING


def differential(paste: Paste, hits: list[Hit], catalog: Catalog) -> Answer:
    """No claim: the cases the evidence leaves (at most three, each with the check that tells
    it apart), else no documented case and the closest family."""
    if hits:  # a generic message, or a documented one something contradicts
        family, _ = message_family(hits[0].line)
        family = family or catalog.cases[hits[0].case].family
        # The cases documenting this very message before those documenting its shape, each
        # group by the paste's other words (its paths, its model's names).
        scores = bm25_scores(catalog.case_docs, paste.query)
        exact = sorted({h.case for h in hits if h.how == "message"}, key=lambda n: (-scores[n], n))
        ranked = exact + sorted({h.case for h in hits} - set(exact), key=lambda n: (-scores[n], n))
        contradicted = next((h.contradicted for h in hits if h.contradicted), "")
        why = (f"documented message, but {contradicted}" if contradicted else
               "a generic message: it names the clash, never its cause")  # fmt: skip
        return _differential_answer(ranked, why, family, hits[0].line, catalog)
    for line in paste.lines:
        family, _ = message_family(line)
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
    # A NaN in the paste rules out a case whose symptom is no NaN at all.
    ruled_out = catalog.without_nan if "nan" in said else set()
    candidates = [] if unknown_error else [
        name for name in ranked[:DIFFERENTIAL_POOL] if scores[name] >= SYMPTOM_MIN_SCORE
        and name not in ruled_out
        and (not catalog.subjects[name] or names_subject(catalog.subjects[name], present))
        and catalog.phrase_words[name] & said][:DIFFERENTIAL_SIZE]  # fmt: skip
    if candidates:  # symptom words decide no family either: each candidate says its own
        return _differential_answer(candidates, "symptom words (they never decide alone)", "",
                                    "", catalog)
    if not unknown_error and "nan" in said and TRAINING_WORDS & said:  # any family a guess
        return Answer("none", "", TRAINING_NAN_WHY, step="abstain")
    family_scores = bm25_scores(catalog.family_docs, paste.query)
    if not unknown_error:  # no error pasted: never a family whose every failure raises
        family_scores = {f: v for f, v in family_scores.items()
                         if f not in catalog.raising_families}  # fmt: skip
    if "nan" in said:  # a NaN is the failure: a family whose failures make one
        family_scores = {f: v for f, v in family_scores.items() if f in catalog.nan_families}
    best = max(family_scores, key=lambda f: (family_scores[f], f), default="")
    if best and family_scores[best] >= FAMILY_MIN_SCORE:
        why = "an error no case documents" if unknown_error else "symptom words"
        found = _family_answer(best, why, catalog, scores)
        found.candidates = [name for name in found.candidates if name not in ruled_out]
        return found
    return Answer("none", "", "nothing fits", step="abstain")  # never a case from boilerplate


DIFFERENTIAL_SIZE = DIFFERENTIAL_POOL = 3  # at most three candidates, of the three best
DIAGNOSE = "nox -s diagnose -- your_script.py"  # settles it on the user's own run


def _differential_answer(ranked: list[str], why: str, family: str, line: str,
                         catalog: Catalog) -> Answer:  # fmt: skip
    """The first three, each with its check; any further case documenting the very message is
    named after them, without one (the list is whole, the told-apart part short)."""
    questions = [asks(catalog.cases[name]) for name in ranked[:DIFFERENTIAL_SIZE]]
    return Answer("differential", family, why, matched=line, candidates=ranked, family=family,
                  questions=questions, step="differential")


def asks(case: Case) -> str:
    """The check that tells this case apart: its declared `asks`, else its title as a question."""
    if case.asks:
        return case.asks
    head, _, rest = case.title.partition(": ")
    return f"{head}? {rest}?" if rest else f"{head}?"


def _family_answer(family: str, why: str, catalog: Catalog,
                   scores: dict[str, float] | None = None) -> Answer:  # fmt: skip
    """No documented case: the family, its cases listed best-fitting first (by the paste's words,
    where given), else by name."""
    scores = scores or {}
    members = sorted((n for n, c in catalog.cases.items() if c.family == family),
                     key=lambda n: (-scores.get(n, 0.0), n))  # fmt: skip
    return Answer("family", family, f"family, by {why}", candidates=members, family=family,
                  step="abstain")
