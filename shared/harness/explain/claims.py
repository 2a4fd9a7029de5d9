"""Step 4, claims: a case only on evidence that decides, nothing contradicting it."""

from __future__ import annotations

import re

from shared.harness.explain.answer import Answer, Hit
from shared.harness.explain.frames import ends_elsewhere
from shared.harness.explain.messages import anchor_strength
from shared.harness.explain.parse import Paste
from shared.harness.explain.store import Catalog, bm25_scores
from shared.harness.explain.text import OTHER_DEVICE, canonical, message_family


def claims(paste: Paste, hits: list[Hit], catalog: Catalog) -> Answer | None:
    """A case, only on evidence that decides: its message (specific, or generic with an anchor:
    raise site, subject, project), or a generic message it declares itself the usual cause of
    (a CPU/CUDA mechanism: none where a pasted message names another device); nothing
    contradicting it."""
    standing = [h for h in hits if not h.contradicted]
    specific = [h for h in standing if not h.generic or h.anchored]
    if specific:
        found = _case_from_hits(specific, hits, paste.query, catalog)
        return None if ends_elsewhere(paste, found.matched, catalog) else found
    if any(OTHER_DEVICE.search(line) and message_family(line)[0] for line in paste.lines):
        return None
    found = _usual_cause_answer(paste.lines, paste.query, standing, catalog)
    return None if not found or ends_elsewhere(paste, found.matched, catalog) else found


def _case_from_hits(specific: list[Hit], hits: list[Hit], query: list[str],
                    catalog: Catalog) -> Answer:  # fmt: skip
    rank = {"message": 2, "shape": 1}
    specific.sort(key=lambda h: (-anchor_strength(h), -rank[h.how], h.case))
    best = specific[0]
    if not best.anchored:  # several cases document the same specific message: BM25 decides
        tied = [h for h in specific if not h.anchored and rank[h.how] == rank[best.how]]
        if len({h.case for h in tied}) > 1:
            scores = bm25_scores(catalog.case_docs, query)
            best = max(tied, key=lambda h: (scores[h.case], -ord(h.case[0])))
    sureness = ("documented message" if best.how == "message" else
                "same message, other dtypes or devices")  # fmt: skip
    if best.anchored:
        sureness += f" + {best.anchored}"
    others = sorted({h.case for h in hits} - {best.case})
    return Answer("case", best.case, sureness, best.variant, best.where, best.line, others,
                  catalog.cases[best.case].family, step="claims")  # fmt: skip


def usual_cause(line: str, words: set[str], catalog: Catalog) -> tuple[str, str]:
    """The case that is the usual cause of a generic message in this line, and the variant it
    names (("", "") if none): its `usual_cause_of` regex found, one of its `named` words in the
    text where it gives some, none of its `unless_named` words."""
    line = canonical(line)
    for name, case in sorted(catalog.cases.items()):
        for usual in case.usual_cause_of:
            if re.search(usual.pattern, line, re.IGNORECASE) and (
                    not usual.named or set(usual.named) & words) and not (
                    set(usual.unless_named) & words):  # fmt: skip
                return name, usual.variant
    return "", ""


def _usual_cause_answer(lines: list[str], query: list[str], hits: list[Hit],
                        catalog: Catalog) -> Answer | None:  # fmt: skip
    """A generic message no anchor ties to a case, which one case is the usual cause of."""
    words = set(query)
    for line in lines:
        name, variant = usual_cause(line, words, catalog)
        if name:
            hit = next((h for h in hits if h.case == name), None)
            return Answer("case", name, USUAL_CAUSE, variant or (hit.variant if hit else ""),
                          hit.where if hit and not variant else "", line,
                          sorted({h.case for h in hits} - {name}),
                          catalog.cases[name].family, step="claims")  # fmt: skip
    return None


USUAL_CAUSE = "the usual cause of this generic message (the message itself never says why)"
