"""The library sets the regression matrix runs, and which cases each runs: decided here only.

From ``pyproject.toml``:
- ``pinned``: the ``cases`` dependency group, every case;
- each ``[tool.gallery.matrix]`` entry: its packages and its cases (``"all"`` or a list);
- the dated sweep, ``[tool.gallery.sweep]``: ``as-of-DATE`` for each date, what the installer
  resolves for the ``cases`` group's package names with nothing uploaded after DATE (uv's
  ``--exclude-newer``), plus that date's extra ``constraints`` where its resolution is itself
  broken; a dated set runs the cases whose ``era_start`` is on or before its date;
- ``custom``: what a user names (``nox -s matrix -- torch==2.16.0 ...`` or ``-- --as-of DATE``).

This module imports no torch; nox, the CLI and the workflows read it.
"""

from __future__ import annotations

import datetime
import tomllib
from dataclasses import dataclass

from packaging.requirements import Requirement

from shared.harness.catalog import case_names, load_case
from shared.harness.paths import REPO_ROOT

PYPROJECT = REPO_ROOT / "pyproject.toml"
PINNED, CUSTOM = "pinned", "custom"
AS_OF_PREFIX = "as-of-"


class LibrarySetError(Exception):
    """A set name or a date that cannot be honoured; the message says what to give."""


@dataclass(frozen=True)
class LibrarySet:
    """What to install for one column of the matrix, and the cases it runs."""

    name: str
    requirements: tuple[str, ...]
    cases: tuple[str, ...]
    as_of: datetime.date | None = None  # resolve with nothing uploaded after this date

    @property
    def install_args(self) -> tuple[str, ...]:
        """The installer's options besides the requirements (uv's ``--exclude-newer``)."""
        return ("--exclude-newer", self.as_of.isoformat()) if self.as_of else ()


def _pyproject() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))


def pinned_requirements() -> tuple[str, ...]:
    return tuple(_pyproject()["dependency-groups"]["cases"])


def sweep_dates() -> list[datetime.date]:
    return [_date(text) for text in _pyproject()["tool"]["gallery"]["sweep"]["dates"]]


def _date(text: object) -> datetime.date:
    if isinstance(text, datetime.date):
        return text
    try:
        return datetime.date.fromisoformat(str(text))
    except ValueError:
        raise LibrarySetError(f"{text!r} is not a date: give YYYY-MM-DD") from None


def dated_set(date: object, extra: tuple[str, ...] = ()) -> LibrarySet:
    """``as-of-DATE``: the ``cases`` group's packages as resolved on DATE, every case of its era.

    A date outside the sweep runs every case (a user asking for that stack wants them all).
    """
    date = _date(date)
    if date > datetime.date.today():
        raise LibrarySetError(f"--as-of {date}: a date in the future resolves today's releases")
    sweep = _pyproject()["tool"]["gallery"]["sweep"]
    names = [Requirement(spec).name for spec in pinned_requirements()]
    constraints = tuple(sweep.get("constraints", {}).get(date.isoformat(), ()))
    in_sweep = date in sweep_dates()
    cases = tuple(
        name for name in case_names() if not in_sweep or load_case(name).era_start <= date
    )
    return LibrarySet(
        name=f"{AS_OF_PREFIX}{date.isoformat()}",
        requirements=_override(tuple(names) + constraints, extra),
        cases=cases,
        as_of=date,
    )


def named_sets() -> list[str]:
    """Every set the matrix runs by name: pinned, [tool.gallery.matrix], the dated sweep."""
    matrix = _pyproject()["tool"]["gallery"]["matrix"]
    dated = [f"{AS_OF_PREFIX}{date.isoformat()}" for date in sweep_dates()]
    return [PINNED, *matrix, *dated]


def library_set(name: str) -> LibrarySet:
    """The set called ``name`` (see the module's docstring); unknown names are refused."""
    if name == PINNED:
        return LibrarySet(PINNED, pinned_requirements(), tuple(case_names()))
    if name.startswith(AS_OF_PREFIX):
        return dated_set(name.removeprefix(AS_OF_PREFIX))
    matrix = _pyproject()["tool"]["gallery"]["matrix"]
    if name not in matrix:
        raise LibrarySetError(f"unknown library set {name!r}; known: {', '.join(named_sets())}")
    named = matrix[name]["cases"]
    cases = tuple(case_names()) if named == "all" else tuple(named)
    unknown = sorted(set(cases) - set(case_names()))
    if unknown:
        raise LibrarySetError(f"pyproject.toml [tool.gallery.matrix] {name}: no case {unknown}")
    return LibrarySet(name, tuple(matrix[name]["packages"]), cases)


def custom_set(arguments: list[str]) -> LibrarySet:
    """What ``nox -s matrix -- ARGS`` names: requirements over the pinned set, or
    ``--as-of DATE`` (with optional extra requirements) for the stack of that date."""
    if arguments[:1] == ["--as-of"]:
        if len(arguments) < 2:
            raise LibrarySetError("--as-of needs a date: --as-of 2024-06-30")
        return dated_set(arguments[1], tuple(arguments[2:]))
    if not arguments:
        raise LibrarySetError(
            "name a set to run it: nox -s matrix -- torch==2.16.0 transformers==5.30.0, "
            "or nox -s matrix -- --as-of 2024-06-30"
        )
    return LibrarySet(
        CUSTOM, _override(pinned_requirements(), tuple(arguments)), tuple(case_names())
    )


def _override(requirements: tuple[str, ...], requested: tuple[str, ...]) -> tuple[str, ...]:
    """``requirements`` with each package named in ``requested`` replaced by that request."""
    try:
        named = {Requirement(spec).name.lower() for spec in requested}
    except ValueError as exc:
        raise LibrarySetError(f"not a requirement: {exc}") from None
    kept = tuple(spec for spec in requirements if Requirement(spec).name.lower() not in named)
    return kept + requested
