"""From a user's words to the documented failure: an error, a traceback, an issue title or a sentence.

    python -m shared.harness explain "RuntimeError: mat1 and mat2 must have the same dtype ..."
    python -m shared.harness explain --file traceback.txt      (or - for standard input)
    python -m shared.harness explain --json "my SDXL images come out black"
    nox -s explain -- "black image"

What it reads (all from each case.toml and README, so a new case is found without code changes):
each variant's documented messages (and their `when` wordings per version and device), raise
sites, the cause, title, phrases, `asks`, declared `fix`, `usual_cause_of` and the README.

The steps, over one parsed paste (issue 31: a wrong claim is worse than none):
1. **parse**: every line (rich's boxes, IPython's ``---->``, Jupyter's cells, ComfyUI's
   ``!!! Exception during processing !!!``, markdown stripped), spelling-corrected once against
   the messages' vocabulary (rapidfuzz), CUDA wordings rewritten to the CPU ones; the frames, the
   innermost one where a library raised, the last exception, the pasted versions.
2. **messages**: each documented message found, by its text or by its *shape* (each side's dtype
   class and device kept: the reverse mismatch is another failure).
3. **frames** (and versions): what contradicts a message's case: raised in a library function
   its message never comes from (torch's generator check in the DataLoader's sampler is no
   generator-device), pasted versions documented as not failing.
4. **claims**: a case only on evidence that decides: its own message (any documented wording);
   a generic message (torch's own checks, which never say why) with an anchor: a raise site, the
   case's subject (SDXL, T5, Gemma 3), its project; a generic message one case declares itself
   the usual cause of. Nothing contradicting it; the paste not ending in another error.
5. **differential**: everything else that documented cases fit: at most three candidates, each
   with the check that tells it apart (`asks`), and the command that settles it on the user's
   own run (``nox -s diagnose -- your_script.py``). Symptom words only ever reach this step.
6. **answer** (abstain): "no documented case" and the closest family of an error (read from both
   sides of a type message: two dtypes on one device are a dtype clash; a NaN, a family whose
   failures make one), or nothing: a description without an error names no family (its words
   fit several), and the command that names the module on the user's run; never a case from
   boilerplate. Its own exit code: 5 (``ExitCode.NO_MATCH``); a claim or a differential: 0.

The package holds one module per step (parse, messages, frames, claims, differential, describe)
over text (reading a paste) and store (the catalog, the stored matrix read once per process).
The site's search box (site/templates/search.js) runs the same steps in the same order over the
same data (``catalog_index``); tests/test_site.py compares which step answered and the answer.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from shared.harness import ExitCode
from shared.harness.case import Case
from shared.harness.explain.answer import Answer
from shared.harness.explain.claims import claims, usual_cause_in
from shared.harness.explain.describe import describe
from shared.harness.explain.differential import differential
from shared.harness.explain.frames import frames
from shared.harness.explain.index import catalog_index
from shared.harness.explain.messages import messages, raise_site_matches
from shared.harness.explain.parse import parse
from shared.harness.explain.store import EXTRA_FAMILIES, Catalog, build_catalog, default_catalog
from shared.harness.explain.text import clean_lines, frames_of, literal, shape

# What the harness (cli, the site's build), tools and tests use; each step in its module.
__all__ = ["EXTRA_FAMILIES", "add_arguments", "answer", "catalog_index", "clean_lines",
           "default_catalog", "describe", "explain", "explain_command", "frames_of", "literal",
           "raise_site_matches", "shape"]  # fmt: skip

def answer(text: str, catalog: Catalog) -> list[Answer]:
    """The steps in order; the first is what explain prints first."""
    paste = parse(text, catalog)
    hits = frames(paste, messages(paste, catalog), catalog)
    usual = usual_cause_in(paste, catalog)  # read once: claimed where it decides, else it leads
    found = claims(paste, hits, usual, catalog) or differential(paste, hits, usual, catalog)
    return [found]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="an error message, a traceback or a phrase")
    parser.add_argument("--file", help="read the text from this file (- for standard input)")
    parser.add_argument("--json", action="store_true", help="the answers as JSON, for tools")
    parser.set_defaults(handler=explain_command)


def explain(text: str, cases: list[Case] | None = None) -> list[Answer]:
    catalog = default_catalog() if cases is None else build_catalog(cases)
    return answer(text, catalog)


def explain_command(args: argparse.Namespace) -> int:
    if args.file:
        try:
            text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
        except OSError as exc:
            print(f"explain: error: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
            return ExitCode.USAGE_ERROR
    else:
        text = args.text or ""
    if not text.strip():
        print("explain: error: give an error message, a traceback (--file F, or - for stdin) "
              "or a symptom phrase", file=sys.stderr)  # fmt: skip
        return ExitCode.USAGE_ERROR
    catalog = default_catalog()
    found = answer(text, catalog)
    if args.json:
        print(json.dumps([asdict(a) for a in found], indent=2))
    else:
        print(describe(found[0], catalog, text))
    # A case claimed, or a differential of documented cases: 0; no documented case (a family
    # at most): its own code, NO_MATCH.
    return ExitCode.NO_MATCH if found[0].kind in ("none", "family") else ExitCode.OK
