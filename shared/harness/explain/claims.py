"""Step 4, claims: a case only on evidence that decides, nothing contradicting it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.harness.case import UsualCause
from shared.harness.explain.answer import Answer, Hit
from shared.harness.explain.frames import ends_elsewhere
from shared.harness.explain.messages import anchor_strength
from shared.harness.explain.parse import Paste
from shared.harness.explain.store import Catalog, bm25_scores
from shared.harness.explain.text import (
    EXTENSION_OP,
    OTHER_DEVICE,
    TORCH_BACKEND,
    canonical,
    message_family,
)


def claims(paste: Paste, hits: list[Hit], usual: UsualFound | None,
           catalog: Catalog) -> Answer | None:  # fmt: skip
    """A case, only on evidence that decides: its message (specific, or generic with an anchor:
    raise site, subject, project), or a generic message it declares itself the usual cause of
    (``usual``, from :func:`usual_cause_in`) and that decides it; nothing contradicting it."""
    standing = [h for h in hits if not h.contradicted]
    specific = [h for h in standing if not h.generic or h.anchored]
    if specific:
        found = _case_from_hits(specific, hits, paste.query, catalog)
        return None if ends_elsewhere(paste, found.matched, catalog) else found
    if not usual or not usual.cause.decides:  # other common causes: it leads the differential
        return None
    hit = next((h for h in standing if h.case == usual.case), None)
    variant = usual.cause.variant or (hit.variant if hit else "")
    return Answer("case", usual.case, USUAL_CAUSE, variant,
                  hit.where if hit and not usual.cause.variant else "", usual.line,
                  sorted({h.case for h in standing} - {usual.case}),
                  catalog.cases[usual.case].family, step="claims")  # fmt: skip


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


@dataclass(frozen=True)
class UsualFound:
    case: str
    cause: UsualCause  # the case's declaration that matched
    line: str  # the pasted line


def usual_cause_in(paste: Paste, catalog: Catalog) -> UsualFound | None:
    """The first pasted line holding a generic message a case declares itself the usual cause
    of: its `usual_cause_of` regex found, one of its `named` words in the text where it gives
    some, none of its `unless_named` words; where that declaration does not decide, a later line
    whose declaration of the same case does (generate's own warning beside the device check it
    led to). None where a pasted message names another device (usual causes are CPU/CUDA
    mechanisms), where the call that raised is an extension's own operator (its kernels, not
    torch's, unless the message names torch's backend), or where the paste ends in another
    error."""
    if any(OTHER_DEVICE.search(line) and message_family(line)[0] for line in paste.lines):
        return None
    words = set(paste.query)
    # lazily: later lines are read only while the first one found does not decide
    found = (f for f in (_usual_cause_of_line(line, words, catalog) for line in paste.lines) if f)
    first = next(found, None)
    if first is None:
        return None
    chosen = first if first.cause.decides else next(
        (f for f in found if f.case == first.case and f.cause.decides), first)
    if EXTENSION_OP.search(paste.text) and not TORCH_BACKEND.search(chosen.line):
        return None
    return None if ends_elsewhere(paste, chosen.line, catalog) else chosen


def _usual_cause_of_line(line: str, words: set[str], catalog: Catalog) -> UsualFound | None:
    plain = canonical(line)
    for name, case in sorted(catalog.cases.items()):
        for usual in case.usual_cause_of:
            if re.search(usual.pattern, plain, re.IGNORECASE) and (
                    not usual.named or set(usual.named) & words) and not (
                    set(usual.unless_named) & words):  # fmt: skip
                return UsualFound(name, usual, line)
    return None


USUAL_CAUSE = "the usual cause of this generic message (the message itself never says why)"
