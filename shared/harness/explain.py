"""From a user's words to the documented failure: an error, a traceback, an issue title or a sentence.

    python -m shared.harness explain "RuntimeError: mat1 and mat2 must have the same dtype ..."
    python -m shared.harness explain --file traceback.txt      (or - for standard input)
    python -m shared.harness explain --json "my SDXL images come out black"
    nox -s explain -- "black image"

What it reads (all from each case.toml and README, so a new case is found without code changes):
each variant's documented messages (and their `when` wordings per version and device), raise
sites, the cause, title, phrases, declared `fix` and the README.

1. **Errors anywhere in the paste**: every line (rich's boxes, IPython's ``---->``, Jupyter's
   cells, ComfyUI's ``!!! Exception during processing !!!``, markdown quotes and backticks
   stripped) is matched against every documented message, after a spelling correction of words
   against the messages' vocabulary (rapidfuzz); CUDA wordings are rewritten to the CPU ones.
   A message with another dtype or device pair matches by *shape*, which keeps each side's dtype
   class and device: the reverse mismatch is another failure.
2. **Generic messages** (torch's own dtype or device checks, a NaN cast: the message names the
   clash, never its cause) name a case only with an anchor: the case's subject (SDXL, T5, Gemma
   3, a named project) in the text, or its raise site outside torch in the frames. Without one,
   a case whose `usual_cause_of` claims the message (torch's meta-tensor copy, index_put's dtype
   check, CPU inputs met by CUDA weights, a float64 operand) is named as its usual cause; else
   the answer is the family, its candidates, and how to find the mechanism on one's own model.
3. **Symptoms**: BM25 (bm25s) over each case's words with the synonyms users write; a case
   whose title names a subject must have it in the text, else the family (BM25 over families).
4. Nothing fits: "no documented case" (exit 1).

The site's search box runs the same steps over the same data (``catalog_index``).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from shared.harness import ExitCode
from shared.harness.catalog import FAMILIES, Case, case_names, load_case
from shared.harness.matrix import all_rows, flip_text, flips, stored_bisections
from shared.harness.paths import MATRIX_DIR
from shared.harness.verdicts import FAILURES, REPRODUCED

# Families a case may not exist for yet: their answers are given all the same.
EXTRA_FAMILIES = {
    "hardware": "a precision the device (or the installed torch build) cannot run",
    "meta-tensors": "parameters still on the meta device (never loaded) moved or copied",
}

# Messages of each family as torch and the libraries word them, whatever the case. `generic`:
# the message names the clash, not its cause (a case needs an anchor to be named).
FAMILY_MESSAGES: tuple[tuple[str, str, bool], ...] = (
    ("dtype-mix", r"(?:mat1|self) and mat2 must have the same dtype", True),
    ("dtype-mix", r"expected (?:mat1|m1) and (?:mat2|m2) to have the same dtype", True),
    ("dtype-mix", r"expected scalar type \w+ but found \w+", True),
    ("dtype-mix", r"found dtype \w+ but expected \w+", True),
    ("dtype-mix", r"input type \((?:c10::|struct c10::)?\w+\) and (?:weight|bias) type", True),
    ("dtype-mix", r"index put requires the source and destination dtypes match", True),
    ("dtype-mix", r"expected query, key,? and value to have the same dtype", True),
    ("dtype-mix", r"expected attn_mask dtype to be bool", False),
    ("device-placement", r"input type \(torch\.(?:cuda\.)?\w+\) and weight type \(torch\.", True),
    ("device-placement", r"expected all tensors to be on the same device", True),
    ("device-placement", r"calling \.generate\(\) with the `?input_ids`? being on a device", True),
    ("device-placement", r"cannot generate a \w+ tensor from a generator of type", False),
    ("device-placement", r"expected a '\w+' device type for generator", False),
    ("overflow", r"invalid value encountered in cast", True),
    ("overflow", r"probability tensor contains either", True),
    ("unsupported-dtype", r"not implemented for '(?:half|bfloat16|complexhalf)'", False),
    ("unsupported-dtype", r"unsupported dtype (?:half|bfloat16)", True),
    ("unsupported-dtype", r"flashattention only supports? fp16 and bf16", False),
    ("hardware", r"bfloat16 is only supported on gpus with compute capability", False),
    ("hardware", r"bf16 is only supported on a100", False),
    ("hardware", r"(?:fp16|bf16) mixed precision requires a gpu", False),
    ("gradient-scaling", r"attempting to unscale fp16 gradients", False),
    ("distributed", r"must flatten tensors with uniform dtype", False),
    ("distributed", r"fsdp expects uniform original parameter dtype", False),
    ("offload", r"you can't move a model that has some modules offloaded", False),
    ("meta-tensors", r"cannot copy out of meta tensor", True),
    ("quantization", r"\.to`? is not supported for `?4-bit`? or `?8-bit", False),
    ("quantization", r"cannot merge lora layers when the model is loaded in 8-bit", False),
)
# Messages that keep no direction: the order of the two dtypes is the order met, not a role.
UNORDERED = re.compile(r"uniform (?:original parameter )?dtype", re.IGNORECASE)

# What users write for the words the cases use (each group's words are added for any of them).
SYNONYMS = (
    ("black", "blank", "nan", "empty", "dark"),
    ("image", "images", "picture", "output", "result", "video"),
    ("sdxl", "xl", "stable diffusion", "sd"),
    ("fp16", "float16", "half", "f16", "16b"),
    ("bf16", "bfloat16"),
    ("fp32", "float32"),
    ("nan", "inf", "overflow", "overflowing"),
    ("change", "updating", "updates", "modified", "decrease", "decreases", "learn"),
    ("merge", "merged", "merges", "merging", "merge_and_unload"),
    ("effect", "diff", "different", "degenerated", "behaves"),
    ("pad", "padding", "<pad>"),
    ("lora", "adapter", "adapters"),
    ("loss", "losses"),
)
# Words a title names that are no subject: libraries, dtypes, devices, glue.
NOT_SUBJECT = {"torch", "transformers", "diffusers", "peft", "accelerate", "bitsandbytes", "pytorch",
               "cpu", "cuda", "gpu", "pure", "the", "on", "a", "an", "in", "with", "of", "to",
               "and", "or", "its", "fp16", "bf16", "float16", "bfloat16", "float32", "half",
               "model", "models", "training", "multi", "single"}  # fmt: skip

# bm25s's English stopwords and the pronouns and verbs every report has.
STOPWORDS = frozenset({"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
                       "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
                       "their", "then", "there", "these", "they", "this", "to", "was", "will",
                       "with", "i", "my", "me", "we", "you", "get", "got", "when", "what", "how",
                       "can", "any", "have", "has", "do", "does", "after", "before"})
BOX = re.compile(r"[│╭╮╰╯─━┃┏┓┗┛❱╷╵▕▏]")
PROMPT = re.compile(r"^\s*(?:\[rank\d+\]:|-+>\s*\d*|\d+\s*[│|]|!!! Exception during processing !!!|>+)\s*")
MARKUP = re.compile(r"\*\*|__|`+")
FRAMES = (
    re.compile(r'File "([^"]+)", line \d+, in (\S+)'),  # plain
    re.compile(r"([\w./\\:~-]+\.py):\d+ in (\w+)"),  # rich
    re.compile(r"File ([\w./\\:~-]+\.py):\d+, in (\w+)"),  # IPython 8
    re.compile(r"([\w./\\:~-]+\.py) in (\w+)\("),  # IPython 7, Colab
)
CUDA_MATMUL = re.compile(
    r"expected (?:mat1|m1) and (?:mat2|m2) to have the same dtype, but got:\s*"
    r"(?:struct )?(?:c10::)?(\w+)\s*!=\s*(?:struct )?(?:c10::)?(\w+)", re.IGNORECASE)  # fmt: skip
# dtype words and their class: which side is half, float32, float64 survives the masking.
DTYPE_CLASS = (
    (r"(?:torch\.)?(?:cuda\.)?(?:half|bfloat16)tensor", "LOWT"),
    (r"(?:torch\.)?(?:cuda\.)?floattensor", "F32T"),
    (r"(?:torch\.)?(?:cuda\.)?doubletensor", "F64T"),
    (r"(?:struct )?(?:c10::)?(?:complexhalf|half|bfloat16|float16|fp16|bf16|bloat16)", "LOW"),
    (r"(?:c10::)?(?:float|float32|fp32)", "F32"),
    (r"(?:c10::)?(?:double|float64)", "F64"),
)
_DTYPE = re.compile("|".join(rf"(?P<c{i}>\b{p}\b)" for i, (p, _) in enumerate(DTYPE_CLASS)),
                    re.IGNORECASE)  # fmt: skip
_DEVICE = re.compile(r"torch\.cuda\.\w+tensor|\bcuda(?::\d+)?\b", re.IGNORECASE)
CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z][a-z])")  # where a space goes in T5Model, typeHalf
# Stable Diffusion 2.x as users write it (SD 2.1, sd21, stable-diffusion-2-1): one word, sd2,
# that the "sd" synonyms (SDXL's) do not take; the digits would otherwise be dropped.
SD2 = re.compile(r"\b(?:sd|stable[ _-]?diffusion)[ _-]?v?2(?:\.[01x]|1)?\b", re.IGNORECASE)
EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\s?:")  # a pasted exception line
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_WORD = re.compile(r"[a-z][a-z0-9_]*|<pad>|\d+[a-z]+", re.IGNORECASE)
MIN_CORRECTABLE, SPELLING_CUTOFF = 5, 85  # a shorter word is too easily another one
SYMPTOM_MIN_SCORE, FAMILY_MIN_SCORE = 2.0, 2.0  # BM25 scores below which nothing fits
# Where the paste cannot decide, the user's own run can: every family answer says how (the
# site's search box shows the same line, from catalog_index).
DIAGNOSE_LINE = (
    "or run your script unmodified under the gallery's watchers: python -m shared.culprit run "
    "SCRIPT [ARGS...] (nox -s diagnose -- SCRIPT); it names the module, the mechanism and the case"
)
GUARD_LINES = {
    "nan": ("from shared.culprit import NonFiniteGuard   # the gallery's shared/culprit/",
            "with NonFiniteGuard(model, gradients=True) as guard: step(batch)   # forward, backward",
            "print(found.describe() if (found := guard.first or guard.first_gradient) else 'none')"),
    "mix": ("from shared.culprit import MismatchGuard   # the gallery's shared/culprit/",
            "with MismatchGuard(model) as guard: loss = step(batch)   # your forward",
            "print(guard.first.describe() if guard.first else 'no dtype/device mismatch')"),
}  # fmt: skip


def clean_lines(text: str) -> list[str]:
    """The paste's lines without traceback decorations and markdown around them."""
    lines = []
    for raw in text.splitlines():
        line = MARKUP.sub("", PROMPT.sub("", BOX.sub(" ", raw)))
        line = " ".join(line.split())
        if line:
            lines.append(line)
    return lines


def frames_of(text: str) -> list[str]:
    """Frames as "path:function", the path from the package down (site-packages cut)."""
    found = []
    for pattern in FRAMES:
        for path, function in pattern.findall(BOX.sub(" ", text)):
            path = path.replace("\\", "/")
            for marker in ("site-packages/", "dist-packages/"):
                path = path.split(marker, 1)[-1]
            found.append(f"{path}:{function}")
    return found


def canonical(line: str) -> str:
    """A message with CUDA's matmul wording rewritten to the CPU's."""
    return CUDA_MATMUL.sub(lambda m: f"mat1 and mat2 must have the same dtype, but got "
                           f"{m.group(1)} and {m.group(2)}", line)  # fmt: skip


def shape(message: str) -> str:
    """Dtypes by class (low / float32 / float64) and devices kept, numbers masked, lowercase."""
    def cls(match: re.Match) -> str:
        name = next(DTYPE_CLASS[int(k[1:])][1] for k, v in match.groupdict().items() if v)
        return ("CUDA" if "cuda" in match.group(0).lower() else "") + name

    text = _NUMBER.sub("#", _DTYPE.sub(cls, canonical(message)))
    text = re.sub(r"\bcuda:#", "cuda", text, flags=re.IGNORECASE)
    if UNORDERED.search(text):  # order is not a direction: sort the classes
        classes = sorted(re.findall(r"\b(?:CUDA)?(?:LOW|F32|F64)T?\b", text))
        text = re.sub(r"\b(?:CUDA)?(?:LOW|F32|F64)T?\b", lambda _: classes.pop(0), text)
    return " ".join(text.lower().split())


def literal(pattern: str) -> str:
    """A documented regex as the plain text it matches (optional groups dropped)."""
    text = re.sub(r"\((?:[^()\\]|\\.)*\)\?", "", pattern)
    text = re.sub(r"\(\\d\+\)|\\d\+|\\\d", "1", text)
    text = re.sub(r"\((\w+)\|[^()]*\)", r"\1", text)  # (bfloat16|float32): the first
    text = text.removeprefix("^").removesuffix("$")
    return re.sub(r"\\(.)", r"\1", text)


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


def signatures(cases: list[Case], matrix_dir: Path = MATRIX_DIR) -> list[Signature]:
    seen: dict[tuple[str, str], set[str]] = {}
    for row in all_rows(matrix_dir):
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
                if expectation.expect not in FAILURES or not expectation.messages:
                    continue
                texts = [literal(p) for p in expectation.messages]
                if not where:
                    texts += sorted(seen.get((case.name, variant.name), ()))
                found.append(Signature(
                    case=case.name, variant=variant.name, where=where,
                    error=expectation.error or expectation.warning,
                    patterns=[_unanchored(p) for p in expectation.messages],
                    shapes=sorted({shape(t) for t in texts if t}),
                    raised_in=expectation.raised_in or expectation.issued_in,
                    note=expectation.note,
                ))  # fmt: skip
    return found


def _unanchored(pattern: str) -> str:
    """A documented regex found anywhere in a line, its final full stop optional (often lost)."""
    return re.sub(r"(\\[.!])?\$?$", "", pattern.removeprefix("^")) + r"[.!]?"


def tokens(text: str) -> list[str]:
    """Lowercase words, "Gemma 3" joined to "gemma3", each with its synonyms' group words."""
    text = SD2.sub(" sd2 ", text)
    text = re.sub(r"\b([A-Za-z]{3,}) (\d)\b(?![.\d])", r"\1\2", text)
    text = CAMEL.sub(" ", text)  # T5Model: T5 Model
    words = [w.lower() for w in _WORD.findall(text)]
    words = [w for w in words if w not in STOPWORDS]
    out = []
    for i, word in enumerate(words):
        out.append(word)
        pair = f"{word} {words[i + 1]}" if i + 1 < len(words) else ""
        for group in SYNONYMS:
            if word in group or pair in group:
                out += [w for w in group if " " not in w and w != word]
    return out


DTYPE_WORDS = {"fp16", "float16", "half", "f16", "16b", "bf16", "bfloat16", "fp32", "float32"}


def stems(words: list[str]) -> set[str]:
    """Words without a plural s: "weight" finds "weights"."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words}


def subject(case: Case) -> list[list[str]]:
    """What the title names before its colon (libraries and dtypes left out), each name as the
    spellings that stand for it: SDXL; T5; gemma3; CogAgent-VQA: cogagent or vqa."""
    head = re.sub(r"\b([A-Za-z]{3,}) (\d)\b", r"\1\2", case.title.split(":", 1)[0])
    names = []
    for compound in re.split(r"[\s/+]+", head):
        parts = {re.sub(r"(?<=[a-z])1$", "", w.lower())  # FSDP1: fsdp
                 for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", compound)}  # fmt: skip
        parts = sorted(w for w in parts - NOT_SUBJECT if len(w) > 1)
        if len(parts) > 1:  # InternLM-XComposer2-VL: "vl" alone names many models
            parts = [w for w in parts if len(w) > 2] or parts
        if parts and parts not in names:
            names.append(parts)
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
    family_docs: dict[str, list[str]]
    subjects: dict[str, list[list[str]]]
    projects: dict[str, str]  # the application project's name ("" for a library's)
    phrase_words: dict[str, set[str]]  # the symptom phrases' words, dtypes left out


def family_description(family: str) -> str:
    return FAMILIES.get(family) or EXTRA_FAMILIES.get(family, "")


def build_catalog(cases: list[Case], matrix_dir: Path = MATRIX_DIR) -> Catalog:
    sigs = signatures(cases, matrix_dir)
    vocabulary = sorted({w.lower() for s in sigs for p in s.patterns
                         for w in re.findall(r"[A-Za-z][A-Za-z0-9_]{%d,}" % (MIN_CORRECTABLE - 1),
                                             literal(p))})  # fmt: skip
    case_docs, family_words = {}, {}
    for case in cases:
        words = " ".join([case.title, case.cause, case.summary, *case.phrases, *case.phrases,
                          case.fix, readme_text(case)[:3000]])  # fmt: skip
        case_docs[case.name] = tokens(words)
        family_words.setdefault(case.family, []).append(" ".join([case.title, *case.phrases]))
    family_docs = {}
    for family in sorted({*FAMILIES, *EXTRA_FAMILIES}):
        text = " ".join([family, family_description(family), *family_words.get(family, [])])
        text += " " + " ".join(FAMILY_HINTS.get(family, ()))
        family_docs[family] = tokens(text)
    subjects = {case.name: subject(case) for case in cases}
    projects = {c.name: application_project(c) for c in cases}
    phrase_words = {c.name: stems(tokens(" ".join(c.phrases))) - DTYPE_WORDS for c in cases}
    return Catalog({c.name: c for c in cases}, sigs, vocabulary, case_docs, family_docs,
                   subjects, projects, phrase_words)  # fmt: skip


# What users write about each family when no message is pasted (the retrieval's family texts).
FAMILY_HINTS = {
    "overflow": ("black image nan fp16 float16 inf nan latents loss nan output all nan",),
    "optimizer-numerics": ("bf16 weights do not change loss does not decrease adam updates",),
    "quantization": ("4bit 8bit bitsandbytes qlora merge quantized",),
    "hardware": ("gpu compute capability v100 t4 2080 1080 support supported supports "
                 "requires a gpu cuda available",),
    "device-placement": ("cpu cuda device moved gpu",),
    "dtype-mix": ("dtype mismatch float half",),
    "masks": ("attention mask padding",),
}


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


def correct_spelling(line: str, vocabulary: list[str]) -> str:
    """Each word near a documented message's word (a typo, another case) replaced by it."""
    from rapidfuzz import fuzz, process  # noqa: PLC0415

    def fix(match: re.Match) -> str:
        word = match.group(0)
        if len(word) < MIN_CORRECTABLE or word.lower() in vocabulary:
            return word
        best = process.extractOne(word.lower(), vocabulary, scorer=fuzz.ratio,
                                  score_cutoff=SPELLING_CUTOFF)  # fmt: skip
        return best[0] if best else word

    return re.sub(r"[A-Za-z][A-Za-z0-9_]+", fix, line)


@dataclass
class Hit:
    case: str
    variant: str
    how: str  # message / shape
    generic: bool
    anchored: str  # what tied a generic message to this case ("" if nothing)
    where: str
    line: str


@dataclass
class Answer:
    kind: str  # case / family / none
    name: str  # the case or the family
    sureness: str  # "documented message", "message + raise site", "symptom words", ...
    variant: str = ""
    where: str = ""
    matched: str = ""  # the line or words that matched
    candidates: list[str] = field(default_factory=list)
    family: str = ""
    by_wording: bool = False  # candidates document the message's wording, not the message


def message_family(line: str) -> tuple[str, bool]:
    """The family a message belongs to and whether it is generic, from torch's own wordings."""
    low = canonical(line).lower()
    for family, pattern, generic in FAMILY_MESSAGES:
        if re.search(pattern, low):
            if family == "dtype-mix" and "input type" in low:
                sides = re.findall(r"\(([^)]*)\)", low)[:2]
                if len(sides) == 2 and ("cuda" in sides[0]) != ("cuda" in sides[1]):
                    return "device-placement", True
            return family, generic
    return "", False


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


ANCHORS = ("raise site", "names", "project")  # strongest first


def anchored_to(case: str, text: str, frames: list[str], sig: Signature, catalog: Catalog) -> str:
    """What in the paste ties it to this case beyond a generic message ("" if nothing)."""
    if sig.raised_in and any(raise_site_matches(sig.raised_in, f) for f in frames
                             if not f.startswith("torch/")):  # torch's checks: every case's
        return "raise site"
    names = catalog.subjects[case]
    if names and names_subject(names, set(tokens(text))):
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


def find_hits(text: str, lines: list[str], catalog: Catalog) -> list[Hit]:
    """Each documented signature found in the paste's error lines (error_lines)."""
    frames = frames_of(text)
    hits = []
    for sig in catalog.signatures:
        for line in lines:
            line_c = canonical(line)
            if any(re.search(p.replace("`", ""), line_c, re.IGNORECASE) for p in sig.patterns):
                how = "message"
            elif any(s and s in shape(line_c) for s in sig.shapes):
                how = "shape"  # shape() keeps each side's dtype class and device
            else:
                continue
            family, generic = message_family(line)
            generic = generic or len(_cases_with(sig.shapes, catalog)) > 1
            anchor = anchored_to(sig.case, text, frames, sig, catalog)
            hits.append(Hit(sig.case, sig.variant, how, generic, anchor, sig.where, line))
            break
    return hits


# A clash of integer dtypes (indices, labels) is another failure than any documented here
# ("to be bool or float": the attention mask check's wording, no operand).
INTEGER_DTYPES = re.compile(r"\b(?:long|int|short|char|byte|bool)\b(?! or\b)")


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


def answer(text: str, catalog: Catalog) -> list[Answer]:
    """Ranked answers: the first is what explain prints first."""
    lines = error_lines(text, catalog)  # spelling-corrected once: each step reads them
    hits = find_hits(text, lines, catalog)
    query = tokens(text)
    specific = [h for h in hits if not h.generic or h.anchored]
    if specific:
        return [_case_from_hits(specific, hits, query, catalog)]
    usual = _usual_cause_answer(lines, query, hits, catalog)
    if usual:
        return [usual]
    if hits:
        return [_family_from_hits(hits, text, catalog)]
    for line in lines:
        family, _ = message_family(line)
        if family:  # no case documents this message: its family's cases would mislead
            found = _family_answer(family, "its message", catalog, text)
            found.candidates = same_wording(line, catalog)
            found.by_wording = True
            return [found]
    return _symptom_answers(query, text, catalog, any(map(EXCEPTION.search, clean_lines(text))))


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
                  catalog.cases[best.case].family)  # fmt: skip


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
                          catalog.cases[name].family)  # fmt: skip
    return None


USUAL_CAUSE = "the usual cause of this generic message (the message itself never says why)"


def _family_from_hits(hits: list[Hit], text: str, catalog: Catalog) -> Answer:
    family, _ = message_family(hits[0].line)
    family = family or catalog.cases[hits[0].case].family
    found = _family_answer(family, "a generic message", catalog, text)
    # The cases documenting this very message (its dtypes, devices and direction) before those
    # documenting its shape with others.
    exact = sorted({h.case for h in hits if h.how == "message"})
    found.candidates = exact + sorted({h.case for h in hits} - set(exact))
    found.matched = hits[0].line
    return found


def _family_answer(family: str, why: str, catalog: Catalog, text: str) -> Answer:
    members = sorted(n for n, c in catalog.cases.items() if c.family == family)
    return Answer("family", family, f"family, by {why}", candidates=members, family=family)


def _symptom_answers(query: list[str], text: str, catalog: Catalog,
                     unknown_error: bool) -> list[Answer]:  # fmt: skip
    """By the words; an exception no case documents is never a case's (a family's at most)."""
    scores = bm25_scores(catalog.case_docs, query)
    ranked = sorted(scores, key=lambda n: (-scores[n], n))
    present = set(query)
    for name in [] if unknown_error else ranked[:3]:
        if scores[name] < SYMPTOM_MIN_SCORE:
            break
        if catalog.subjects[name] and not names_subject(catalog.subjects[name], present):
            continue  # another model's symptom
        if not catalog.phrase_words[name] & stems(query):
            continue  # only the words of error messages or of the README: no symptom of it
        said = {w.lower() for w in _WORD.findall(text)}
        words = sorted(set(catalog.case_docs[name]) & said)[:6]
        return [Answer("case", name, "symptom words: " + ", ".join(words), matched=text.strip()[:80],
                       family=catalog.cases[name].family)]  # fmt: skip
    family_scores = bm25_scores(catalog.family_docs, query)
    best = max(family_scores, key=lambda f: (family_scores[f], f))
    if family_scores[best] >= FAMILY_MIN_SCORE:
        return [_family_answer(best, "symptom words", catalog, "")]
    return [Answer("none", "", "nothing fits", candidates=ranked[:3])]


# ---- the printed answer ---------------------------------------------------------------------


def fix_statement(case: Case, broken: str) -> tuple[str, str]:
    """The fixing variant and the fix: the declared one, else the diff's added code lines."""
    fixed = next((v for v in case.variants if v.fixes == broken), None) or next(
        (v for v in case.variants if v.fixes), None)  # fmt: skip
    if case.fix:
        return (fixed.name if fixed else ""), case.fix
    if fixed is None:
        return "", ""
    scripts = {v.name: v.script for v in case.variants}
    old = scripts[fixed.fixes].read_text(encoding="utf-8").splitlines()
    new = fixed.script.read_text(encoding="utf-8").splitlines()
    added = [line[1:].strip() for line in difflib.unified_diff(old, new, lineterm="", n=0)
             if line.startswith("+") and not line.startswith("+++")]  # fmt: skip
    quotes = ('"' * 3, "'" * 3)
    code = [line for line in added if line and not line.startswith(("#", "from ", "import ", *quotes))
            and not line.endswith(quotes)]  # fmt: skip
    return fixed.name, first_statement(code)


def first_statement(lines: list[str]) -> str:
    """The first statement of the added code, its continuation lines joined (brackets balanced)."""
    statement, depth = [], 0
    for line in lines:
        code, _, comment = line.partition("  # ")
        statement.append(line if not depth and not statement else code)
        depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
        if depth <= 0:
            break
    return " ".join(statement)


def versions_of(case: str, variant: str, matrix_dir: Path = MATRIX_DIR) -> str:
    rows = [row for row in all_rows(matrix_dir) if (row.case, row.variant) == (case, variant)]
    for flip in flips(rows, stored_bisections(matrix_dir)):
        return flip_text(flip).split(";")[0].split(" [")[0]  # the first clause
    if any(row.verdict == REPRODUCED for row in rows):
        return "reproduced on every stored stack that ran it"
    return "not in the stored matrix yet"


PASTED_VERSION = re.compile(
    r"\b(torch|pytorch|transformers|diffusers|peft|accelerate|bitsandbytes)\b[^\n\d]{0,12}?"
    r"v?(\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)  # fmt: skip


def pasted_versions(text: str) -> dict[str, str]:
    return {n.lower().replace("pytorch", "torch"): v for n, v in PASTED_VERSION.findall(text)}


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


def describe(found: Answer, catalog: Catalog, text: str, matrix_dir: Path = MATRIX_DIR) -> str:
    if found.kind == "none":
        return "no documented case; closest: " + (", ".join(found.candidates) or "none")
    if found.kind == "family":
        return describe_family(found)
    case = catalog.cases[found.name]
    variant = next(v for v in case.variants if v.name == found.variant) if found.variant else next(
        v for v in case.variants if v.expectation.expect in FAILURES)  # fmt: skip
    fixed, fix = fix_statement(case, variant.name)
    cause = variant.expectation.note if found.variant and variant.expectation.note else case.cause
    where = versions_of(case.name, variant.name, matrix_dir)
    mine = affected(case, variant.name, pasted_versions(text))
    lines = [
        f"{case.name}: {case.title}",
        f"  how sure: {found.sureness}" + (f" (the wording {found.where})" if found.where else ""),
        f"  cause ({variant.name}): {cause}",
        f"  fix ({fixed}): {fix}" if fix else "  fix: none declared",
        f"  where: {where}" + (f"; {mine}" if mine else ""),
        f"  upstream: {case.issue}",
        f"  run it: nox -s case-{case.name}",
    ]
    if found.candidates:
        lines.append("  also documents this message: " + ", ".join(found.candidates))
    return "\n".join(lines)


# What differs between a message and the documented one of the same wording, by family.
OTHER_OPERANDS = {"device-placement": "other tensors or devices"}


def describe_family(found: Answer) -> str:
    family = found.name
    guard = GUARD_LINES["nan" if family == "overflow" else "mix"]
    lines = [f"family {family}: {family_description(family)} ({found.sureness}; "
             "no documented case's mechanism is certain from this text)"]  # fmt: skip
    if found.candidates:
        label = ("documented with this message" if found.matched else
                 f"documented with its wording, {OTHER_OPERANDS.get(family, 'other dtypes')}"
                 if found.by_wording else "cases of this family")  # fmt: skip
        lines.append(f"  {label}: " + ", ".join(found.candidates))
    if family in ("dtype-mix", "device-placement", "overflow"):
        lines.append("  find which on your model: wrap one step, the report names the module:")
        lines += [f"      {line}" for line in guard]
    lines.append(f"  {DIAGNOSE_LINE}")
    if family == "overflow":
        lines.append("  then compute that module in bfloat16 or float32 (bf16 keeps float32's range)")
    if family == "unsupported-dtype":
        lines.append("  run that op in a dtype it has: float32 where a half kernel is missing (on "
                     "the CPU); bfloat16 / float16 where a kernel takes only those "
                     "(flash-attention: load with torch_dtype=torch.bfloat16)")  # fmt: skip
    if family == "hardware":
        lines.append("  check torch.cuda.is_available() and torch.cuda.is_bf16_supported(); "
                     "use float16 or float32 where they are False")  # fmt: skip
    return "\n".join(lines)


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


def catalog_index(cases: list[Case], matrix_dir: Path = MATRIX_DIR) -> str:
    """What the site's search box needs, as JSON: explain's data and constants, its indexes."""
    catalog = build_catalog(cases, matrix_dir)
    answers = {}
    for case in cases:
        failing = next(v.name for v in case.variants if v.expectation.expect in FAILURES)
        fixed, fix = fix_statement(case, failing)
        answers[case.name] = {"title": case.title, "cause": case.cause, "fix": fixed,
                              "fix_line": fix, "family": case.family}  # fmt: skip
    return json.dumps({
        "signatures": [asdict(s) for s in catalog.signatures],
        "cases": answers,
        "families": {f: family_description(f) for f in sorted({*FAMILIES, *EXTRA_FAMILIES})},
        "family_messages": FAMILY_MESSAGES,
        "diagnose_line": DIAGNOSE_LINE,
        "unordered": UNORDERED.pattern,
        "sd2": SD2.pattern,  # case-insensitive
        "integer_dtypes": INTEGER_DTYPES.pattern,
        "synonyms": SYNONYMS,
        "stopwords": sorted(STOPWORDS),
        "dtype_class": DTYPE_CLASS,
        "vocabulary": catalog.vocabulary,
        "subjects": catalog.subjects,
        "projects": catalog.projects,
        "usual_causes": {c.name: [[u.pattern, list(u.named), list(u.unless_named), u.variant]
                                  for u in c.usual_cause_of]
                         for c in cases if c.usual_cause_of},
        "usual_cause": USUAL_CAUSE,
        "phrase_words": {k: sorted(v) for k, v in catalog.phrase_words.items()},
        "dtype_words": sorted(DTYPE_WORDS),
        "case_docs": {k: sorted(set(v)) for k, v in catalog.case_docs.items()},
        "case_bm25": bm25_table(catalog.case_docs),
        "family_bm25": bm25_table(catalog.family_docs),
        "limits": {"min_correctable": MIN_CORRECTABLE, "spelling_cutoff": SPELLING_CUTOFF,
                   "symptom_min": SYMPTOM_MIN_SCORE, "family_min": FAMILY_MIN_SCORE},
    })  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="an error message, a traceback or a phrase")
    parser.add_argument("--file", help="read the text from this file (- for standard input)")
    parser.add_argument("--json", action="store_true", help="the answers as JSON, for tools")
    parser.set_defaults(handler=explain_command)


@cache
def default_catalog() -> Catalog:
    return build_catalog([load_case(name) for name in case_names()])


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
    return ExitCode.ANOMALIES if found[0].kind == "none" else ExitCode.OK
