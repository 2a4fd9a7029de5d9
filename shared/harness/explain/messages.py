"""Step 2, messages: each documented message found in the paste, by its text or its shape."""

from __future__ import annotations

import re

from shared.harness.explain.answer import Hit
from shared.harness.explain.parse import Paste
from shared.harness.explain.store import Catalog, Signature, names_subject
from shared.harness.explain.text import (
    FAMILY_MESSAGES,
    INTEGER_DTYPES,
    canonical,
    frames_of,
    message_family,
    pasted_words,
    shape,
)

ANCHORS = ("raise site", "names", "project")  # strongest first
# Code every model's failure passes through, so a raise site there ties a generic message to no
# case: torch's own checks, and transformers' generation loop (every model samples in _sample).
SHARED_SITES = ("torch/", "transformers/generation/")


def anchored_to(case: str, text: str, words: set[str], frames: list[str], sig: Signature,
                catalog: Catalog) -> str:  # fmt: skip
    """What in the paste ties it to this case beyond a generic message ("" if nothing); ``words``:
    its pasted_words."""
    if sig.raised_in and any(raise_site_matches(sig.raised_in, f) for f in frames
                             if not f.startswith(SHARED_SITES)):  # fmt: skip
        return "raise site"
    names = catalog.subjects[case]
    if names and names_subject(names, words):
        return "names " + ", ".join(spellings[0] for spellings in names)
    project = catalog.projects[case]
    if project and project in text.lower():
        return "project " + project
    return ""


def raise_site_matches(raised_in: str, frame: str) -> bool:
    """The documented raise site, or its file and function in another layout of the same
    package (diffusers < 0.26 kept the VAE in models/autoencoder_kl.py)."""
    if re.search(raised_in, frame):
        return True
    package, _, rest = raised_in.partition("/")
    tail = raised_in.rsplit("/", 1)[-1]
    return bool(rest) and frame.startswith(package + "/") and bool(
        re.search(tail, frame.rsplit("/", 1)[-1]))  # fmt: skip


def anchor_strength(hit: Hit) -> int:
    return next((len(ANCHORS) - i for i, a in enumerate(ANCHORS) if hit.anchored.startswith(a)), 0)


def says_message(sig: Signature, line_c: str) -> bool:
    """A line (its canonical form) holds one of the signature's documented messages, their
    backticks dropped as the paste's markdown marks are."""
    return any(re.search(p.replace("`", ""), line_c, re.IGNORECASE) for p in sig.patterns)


def find_hits(text: str, lines: list[str], catalog: Catalog) -> list[Hit]:
    """Each documented signature found in the paste's error lines (error_lines)."""
    frames, words = frames_of(text), set(pasted_words(text))  # read once, not once per hit
    hits = []
    # Each line's canonical form and shape, made once: every signature compares them.
    canonical_lines = [canonical(line) for line in lines]
    shapes = [shape(line_c) for line_c in canonical_lines]
    for sig in catalog.signatures:
        for line, line_c, line_shape in zip(lines, canonical_lines, shapes, strict=True):
            if says_message(sig, line_c):
                how = "message"
            elif any(s and s in line_shape for s in sig.shapes):
                how = "shape"  # shape() keeps each side's dtype class and device
            else:
                continue
            family, generic = message_family(line)
            generic = generic or len(_cases_with(sig.shapes, catalog)) > 1
            anchor = anchored_to(sig.case, text, words, frames, sig, catalog)
            hits.append(Hit(sig.case, sig.variant, how, generic, anchor, sig.where, line))
            break
    return hits


def same_wording(line: str, catalog: Catalog) -> list[str]:
    """The cases documenting a message's wording with other floating dtypes (the closest, when
    none documents it as pasted): none for a clash of integer dtypes."""
    low = canonical(line).lower()
    pattern = next((p for _, p, _ in FAMILY_MESSAGES if re.search(p, low)), None)
    if pattern is None or INTEGER_DTYPES.search(low):
        return []
    return sorted({sig.case for sig in catalog.signatures
                   if any(re.search(pattern, s.lower()) for s in sig.shapes)})  # fmt: skip


def _cases_with(shapes: list[str], catalog: Catalog) -> set[str]:
    return {s.case for s in catalog.signatures if set(s.shapes) & set(shapes)}


def messages(paste: Paste, catalog: Catalog) -> list[Hit]:
    """Each documented message found in the paste's error lines."""
    return find_hits(paste.text, paste.lines, catalog)
