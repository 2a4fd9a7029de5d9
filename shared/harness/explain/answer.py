"""What a step hands on: a documented message found (Hit), an answer (Answer)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Hit:
    case: str
    variant: str
    how: str  # message / shape
    generic: bool
    anchored: str  # what tied a generic message to this case ("" if nothing)
    where: str
    line: str
    contradicted: str = ""  # what in the paste says this is not the case's failure ("" if nothing)


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
    questions: list[str] = field(default_factory=list)  # a differential: each candidate's check
    step: str = ""  # the step that answered: claims, differential or abstain
