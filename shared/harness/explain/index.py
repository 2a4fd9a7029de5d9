"""What the site's search box needs (search.js carries the same steps over it)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from shared.harness.case import FAILURES, FAMILIES, Case
from shared.harness.explain.claims import USUAL_CAUSE
from shared.harness.explain.describe import fix_statement, not_failing, variant_note
from shared.harness.explain.differential import DIAGNOSE, DIFFERENTIAL_SIZE, LEADS_WHY, asks
from shared.harness.explain.messages import SHARED_SITES
from shared.harness.explain.store import (
    EXTRA_FAMILIES,
    bm25_table,
    build_catalog,
    family_description,
)
from shared.harness.explain.text import (
    COMFY_BANNER,
    DESCRIPTION_WHY,
    DTYPE_CLASS,
    DTYPE_WORDS,
    EXCEPTION,
    EXCLAIMED,
    EXTENSION_OP,
    FAMILY_MESSAGES,
    INTEGER_DTYPES,
    MIN_CORRECTABLE,
    NAMES_NOTHING_WHY,
    NAN_WORD,
    OTHER_DEVICE,
    PASTED_VERSION,
    QUANTIZED_BASE,
    QUANTIZED_SIDE,
    QUANTIZED_WHY,
    RAISE_LINE,
    SD1,
    SD2,
    SD_TOOLS,
    SD_VERSIONS,
    SDXL_FILE,
    SDXL_NAMED,
    SIDE_DEVICES,
    SPELLING_CUTOFF,
    STOPWORDS,
    SYMPTOM_MIN_SCORE,
    SYNONYMS,
    TORCH_BACKEND,
    TRAINING_NAN_WHY,
    TRAINING_WORDS,
    TYPE_SIDES,
    UNKNOWN_ERROR_WHY,
    UNORDERED,
    WARNING_SITE,
)
from shared.harness.paths import MATRIX_DIR
from shared.hazards import NAMES_NOTHING


def catalog_index(cases: list[Case], matrix_dir: Path = MATRIX_DIR) -> str:
    """What the site's search box needs, as JSON: explain's data and constants, its indexes."""
    catalog = build_catalog(cases, matrix_dir)
    answers = {}
    for case in cases:
        failing = next(v.name for v in case.variants if v.expectation.expect in FAILURES)
        fixed, fix = fix_statement(case, failing)
        answers[case.name] = {"title": case.title, "cause": case.cause, "fix": fixed,
                              "fix_line": fix, "family": case.family, "asks": asks(case),
                              "not_failing": not_failing(case),
                              # the variants a usual cause names, for a differential it leads
                              "variant_notes": {u.variant: variant_note(case, u.variant)
                                                for u in case.usual_cause_of if u.variant}}  # fmt: skip
    return json.dumps({
        "signatures": [asdict(s) for s in catalog.signatures],
        "cases": answers,
        "families": {f: family_description(f) for f in sorted({*FAMILIES, *EXTRA_FAMILIES})},
        "family_messages": FAMILY_MESSAGES,
        "unordered": UNORDERED.pattern,
        "shared_sites": SHARED_SITES,
        "names_nothing": NAMES_NOTHING.pattern,  # case-insensitive
        "names_nothing_why": NAMES_NOTHING_WHY,
        "quantized_base": QUANTIZED_BASE.pattern,  # on the lower-cased text
        "quantized_why": QUANTIZED_WHY,
        "sd1": SD1.pattern,  # case-insensitive
        "sdxl_named": SDXL_NAMED.pattern,  # case-insensitive
        "sd2": SD2.pattern,  # case-insensitive
        "sdxl_file": SDXL_FILE.pattern,  # case-insensitive
        "sd_tools": sorted(SD_TOOLS),
        "sd_versions": sorted(SD_VERSIONS),
        "side_devices": SIDE_DEVICES,
        "quantized_side": QUANTIZED_SIDE.pattern,  # case-insensitive: the quantization family
        "comfy_banner": COMFY_BANNER.pattern,
        "exclaimed": EXCLAIMED.pattern,
        "exception": EXCEPTION.pattern,  # a pasted exception line
        "type_sides": [pattern.pattern for pattern in TYPE_SIDES],  # a type message's two sides
        "raise_line": RAISE_LINE.pattern,  # a traceback's source line of a raise
        "nan_word": NAN_WORD.pattern,  # case-insensitive
        "integer_dtypes": INTEGER_DTYPES.pattern,
        "synonyms": SYNONYMS,
        "stopwords": sorted(STOPWORDS),
        "dtype_class": DTYPE_CLASS,
        "vocabulary": catalog.vocabulary,
        "subjects": catalog.subjects,
        "projects": catalog.projects,
        "usual_causes": {c.name: [[u.pattern, list(u.named), list(u.unless_named), u.variant,
                                   u.decides] for u in c.usual_cause_of]
                         for c in cases if c.usual_cause_of},
        "usual_cause": USUAL_CAUSE,
        "leads_why": LEADS_WHY,
        "pasted_version": PASTED_VERSION.pattern,  # case-insensitive
        "differential_size": DIFFERENTIAL_SIZE,
        "diagnose": DIAGNOSE,
        "phrase_words": {k: sorted(v) for k, v in catalog.phrase_words.items()},
        "describes": {c.name: list(c.describes) for c in cases if c.describes},  # any case
        "without_nan": sorted(catalog.without_nan),
        "training_words": sorted(TRAINING_WORDS),
        "training_nan_why": TRAINING_NAN_WHY,
        "description_why": DESCRIPTION_WHY,
        "unknown_error_why": UNKNOWN_ERROR_WHY,
        "warning_site": WARNING_SITE.pattern,
        "other_device": OTHER_DEVICE.pattern,  # case-insensitive
        "extension_op": EXTENSION_OP.pattern,
        "torch_backend": TORCH_BACKEND.pattern,
        "dtype_words": sorted(DTYPE_WORDS),
        "case_docs": {k: sorted(set(v)) for k, v in catalog.case_docs.items()},
        "case_bm25": bm25_table(catalog.case_docs),
        "limits": {"min_correctable": MIN_CORRECTABLE, "spelling_cutoff": SPELLING_CUTOFF,
                   "symptom_min": SYMPTOM_MIN_SCORE},
    })  # fmt: skip
