"""Step 3, frames (and versions): what in the paste contradicts a message's case."""

from __future__ import annotations

import re

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from shared.harness.case import FAILURES, Case
from shared.harness.explain.answer import Hit
from shared.harness.explain.messages import find_hits, raise_site_matches
from shared.harness.explain.parse import Paste, error_lines
from shared.harness.explain.store import Catalog
from shared.harness.explain.text import (
    OTHER_DEVICE,
    RAISE_LINE,
    canonical,
    message_family,
    warning_site,
)


def contradiction(hit: Hit, paste: Paste, catalog: Catalog) -> str:
    """What in the paste says this documented message is not this case's failure ("" if
    nothing): the innermost frame is a library function the case's message never comes from
    (its documented raise site elsewhere, or none: the case's own code calls the builtin), the
    warning line says it was issued in a file the case's warning never comes from, the raise line
    quotes more of a message than the case's (another check's wording), the message names a
    device no case runs on, the pasted versions are documented as not failing."""
    sig = next(s for s in catalog.signatures if (s.case, s.variant, s.where) ==
               (hit.case, hit.variant, hit.where))  # fmt: skip
    if hit.how == "message" and paste.innermost and not paste.innermost.startswith("torch/nn/") \
            and not (sig.raised_in and raise_site_matches(sig.raised_in, paste.innermost)):
        return f"raised in {paste.innermost}, where this case's message never comes from"
    site = warning_site(hit.line)
    if hit.how == "message" and site and sig.raised_in and not raise_site_matches(sig.raised_in,
                                                                                  site):
        return f"issued in {site}, where this case's warning never comes from"
    if hit.how == "message" and sig.ends and RAISE_LINE.search(hit.line) and not any(
            re.search(end, canonical(hit.line), re.IGNORECASE) for end in sig.ends):  # fmt: skip
        return "the raise line's message goes on past this case's: another check's wording"
    device = OTHER_DEVICE.search(hit.line)
    if hit.how == "message" and device:
        name = (device.group(1) or device.group(2)).lower()
        return f"the message names the {name} device, where no case runs"
    mine = affected(catalog.cases[hit.case], hit.variant, paste.versions)
    if "documented as not failing" in mine:
        return mine
    return ""


def ends_elsewhere(paste: Paste, line: str, catalog: Catalog) -> bool:
    """The paste ends with another exception than the line a claim rests on, one no documented
    message or family explains (read as every line is: spelling-corrected): that exception is
    the failure to explain."""
    last = paste.last_exception
    if not last or line in last or last in line:
        return False
    message = last.partition(": ")[2]
    if message and RAISE_LINE.search(line) and message in line:
        return False  # the traceback's source line of the raise, quoting that exception's message
    variants = error_lines(last, catalog)
    if any(message_family(variant)[0] for variant in variants):
        return False
    return not find_hits(last, variants, catalog)


def affected(case: Case, variant: str, versions: dict[str, str]) -> str:
    """Whether the pasted versions fall where the variant's `when` entries say it does not fail."""
    chosen = next((v for v in case.variants if v.name == variant), None)
    if chosen is None or not versions:
        return ""
    for condition in chosen.conditions:
        if condition.expectation.expect in FAILURES or not condition.packages:
            continue
        inside = []
        for name, spec in condition.packages.items():
            if name in versions:
                try:
                    inside.append(Version(versions[name]) in SpecifierSet(str(spec)))
                except InvalidVersion:
                    pass
        if inside and all(inside):
            return "your versions (" + ", ".join(f"{k} {v}" for k, v in versions.items()) + \
                ") are documented as not failing: another mechanism?"
    return "your versions (" + ", ".join(f"{k} {v}" for k, v in versions.items()) + ") are affected"


def frames(paste: Paste, hits: list[Hit], catalog: Catalog) -> list[Hit]:
    """What contradicts each documented message found: its hit is kept, marked."""
    for hit in hits:
        hit.contradicted = contradiction(hit, paste, catalog)
    return hits
