"""The verdict kinds, in one table: each kind's role, its short label, its place in a list of
counts, its colours and the sentence a run by hand ends with.

To add a kind, add one ``Kind`` entry to :data:`KINDS`; then say when ``verdicts.judge`` gives
it. The harness's lines, the site (badges, counts, timeline, its stylesheet's colours) and the
README's glossary read this table.
"""

from __future__ import annotations

from dataclasses import dataclass

# A kind's role: documented behaviour (the run passes), an anomaly (it fails: exit 1), or a
# variant that did not run here (never a pass: always with its reason).
DOCUMENTED, ANOMALY, SKIP = "documented", "anomaly", "skip"


@dataclass(frozen=True)
class Colours:
    """A badge's colours (the site's stylesheet and its timeline cells)."""

    fill: str
    ink: str
    border: str


@dataclass(frozen=True)
class Kind:
    name: str
    role: str  # DOCUMENTED, ANOMALY or SKIP
    label: str  # its name in the timeline's narrow cells
    meaning: str  # the README's glossary line
    # The sentence after "gallery verdict: <KIND>:" that a run by hand ends with; it may use
    # {detail} (the verdict's), {versions} (the libraries') and {where} (where the failure
    # exists, for a failure absent here).
    by_hand: str
    colours: Colours
    # What its label says in the legend under the site's timeline ("": an anomaly, said there
    # together: anything else is not as documented).
    legend: str = ""

    @property
    def css_class(self) -> str:
        """The badge's class: its own for a documented kind, one for every anomaly."""
        return ANOMALY if self.role == ANOMALY else self.name.lower()


# The names code refers to (a kind's entry below is the rest of it).
REPRODUCED, PASSED, UNAFFECTED, SKIPPED = "REPRODUCED", "PASSED", "UNAFFECTED", "SKIPPED"
WRONG_ERROR, NOT_REPRODUCED, FIX_FAILED = "WRONG-ERROR", "NOT-REPRODUCED", "FIX-FAILED"
TIMEOUT, CRASHED = "TIMEOUT", "CRASHED"

_ANOMALY_COLOURS = Colours("#ffebe9", "#a40e26", "#ffcecb")
_NOT_AS_DOCUMENTED = "NOT as documented: {detail}"

# In the order counts are listed in: the documented kinds, the skip, then the anomalies.
KINDS = (
    Kind(REPRODUCED, DOCUMENTED, "REPRO",
         "a broken variant failed as documented: the exception (type, message, where raised), "
         "the measured symptom, or the warning",
         "this run shows the documented failure ({detail})",
         Colours("#ddf4ff", "#0550ae", "#b6e3ff"),
         legend="reproduced as documented (* raises nothing)"),
    Kind(PASSED, DOCUMENTED, "PASS",
         "a fixed variant ran clean and matched its float32 reference (dtype checked)",
         "fixed: matches float32 ({detail})",
         Colours("#dafbe1", "#116329", "#aceebb"), legend="fix passed"),
    Kind(UNAFFECTED, DOCUMENTED, "UNAFF",
         "a broken variant ran clean on library versions where the case documents the failure "
         "as absent (a matrix flip)",
         "the failure is absent on these versions ({versions}), as documented; {where}",
         Colours("#e0e7ff", "#3730a3", "#c7d2fe"),
         legend="failure absent on these versions, as documented"),
    Kind(SKIPPED, SKIP, "skip",
         "cannot run here (e.g. needs CUDA); the reason is shown. Never counted as a pass",
         "the harness would not run this here: {detail}",
         Colours("#eaeef2", "#57606a", "#d0d7de"),
         legend="cannot run there (reason in the table)"),
    Kind(WRONG_ERROR, ANOMALY, "WRONG",
         "a broken variant failed, but not as documented (shows what it saw)",
         _NOT_AS_DOCUMENTED, _ANOMALY_COLOURS),
    Kind(NOT_REPRODUCED, ANOMALY, "NOT-R",
         "a broken variant ran clean: the bug (or its symptom) no longer happens",
         _NOT_AS_DOCUMENTED, _ANOMALY_COLOURS),
    Kind(FIX_FAILED, ANOMALY, "FIX-F",
         "a fixed variant raised, was not close to float32, or checked nothing",
         _NOT_AS_DOCUMENTED, _ANOMALY_COLOURS),
    Kind(TIMEOUT, ANOMALY, "TIME",
         "no result within the variant's time limit (SIGTERM, then SIGKILL, to all it started)",
         _NOT_AS_DOCUMENTED, _ANOMALY_COLOURS),
    Kind(CRASHED, ANOMALY, "CRASH",
         "the process died (signal or exit) without a result, or exited non-zero after one",
         _NOT_AS_DOCUMENTED, _ANOMALY_COLOURS),
)  # fmt: skip
BY_NAME = {kind.name: kind for kind in KINDS}

EXPECTED_KINDS = tuple(kind.name for kind in KINDS if kind.role == DOCUMENTED)
ANOMALIES = tuple(kind.name for kind in KINDS if kind.role == ANOMALY)


def kind_of(name: str) -> Kind:
    """The kind of that name; a name no entry has (a record of another release) reads as an
    anomaly: shown, never taken for documented behaviour."""
    return BY_NAME.get(name) or Kind(name, ANOMALY, name, "", _NOT_AS_DOCUMENTED, _ANOMALY_COLOURS)


def order(name: str) -> int:
    """A kind's place in a list of counts (table order; an unknown kind last)."""
    return next((i for i, kind in enumerate(KINDS) if kind.name == name), len(KINDS))


def stylesheet() -> str:
    """The badge rules of the site's stylesheet, one per class, from the kinds' colours."""
    rules = {}
    for kind in KINDS:
        c = kind.colours
        rules.setdefault(kind.css_class, f".verdict.{kind.css_class} {{ background: {c.fill}; "
                         f"color: {c.ink}; border-color: {c.border}; }}")  # fmt: skip
    return "\n".join(rules.values()) + "\n"
