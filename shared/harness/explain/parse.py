"""Step 1, parse: one paste read once (its error lines spelling-corrected) for every step."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from shared.harness.explain.store import Catalog
from shared.harness.explain.text import (
    CAMEL,
    EXCEPTION,
    clean_lines,
    correct_spelling,
    frames_of,
    innermost_library_frame,
    pasted_versions,
    pasted_words,
)


def error_lines(text: str, catalog: Catalog) -> list[str]:
    """Candidate message lines: each cleaned line and its spelling-corrected form."""
    lines = clean_lines(text)
    # A message wrapped over two lines (a terminal's width, a mail): its line joined to the next.
    lines += [f"{line} {after}" for line, after in zip(lines, lines[1:])
              if EXCEPTION.search(line) and not EXCEPTION.search(after)
              and not after.startswith(("File ", "Traceback"))]  # fmt: skip
    out = []
    for line in lines:
        out.append(line)
        spaced = CAMEL.sub(" ", line)  # "scalar typeHalf": a space lost
        corrected = correct_spelling(spaced, catalog.vocabulary)
        out += [variant for variant in dict.fromkeys((spaced, corrected)) if variant != line]
    return out


# ---- the steps: parse -> messages -> frames -> claims -> differential -> answer ---------------


@dataclass
class Paste:
    """One parsed paste, read once: every step reads it."""

    text: str
    lines: list[str]  # error_lines: cleaned, spelling-corrected once
    frames: list[str]  # "path:function", site-packages cut
    innermost: str  # the innermost frame when it is a library's (site-packages), else ""
    query: list[str]  # its words (pasted_words)
    last_exception: str  # the last exception line ("" if none)
    versions: dict[str, str]


def parse(text: str, catalog: Catalog) -> Paste:
    # Full-width punctuation as CJK input methods type it ("Input type （BFloat16）") read as ASCII.
    text = unicodedata.normalize("NFKC", text)
    lines = clean_lines(text)
    # An exception line that ends at its colon has its message on the next line (wrapped).
    exceptions = [f"{line} {after}" if line.endswith(":") else line
                  for line, after in zip(lines, [*lines[1:], ""], strict=True)
                  if EXCEPTION.search(line)]  # fmt: skip
    return Paste(text, error_lines(text, catalog), frames_of(text), innermost_library_frame(text),
                 pasted_words(text), exceptions[-1] if exceptions else "", pasted_versions(text))
