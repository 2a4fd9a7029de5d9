"""The library sets the regression matrix runs, and which cases each runs: decided here only.

From ``pyproject.toml``:
- ``pinned``: the ``cases`` dependency group, every case;
- each ``[tool.gallery.matrix]`` entry: its packages and its cases (``"all"`` or a list);
- the dated sweep, ``[tool.gallery.sweep]``: ``as-of-DATE`` for each date, what the installer
  resolves for the ``cases`` group's package names with nothing uploaded after DATE (uv's
  ``--exclude-newer``); a dated set runs the cases whose ``era_start`` is on or before its date;
- a custom set: what a user names (``nox -s matrix -- torch==2.16.0 ...``, ``-- -r
  requirements.txt``, ``-- --lock pylock.toml`` or ``-- --as-of DATE``), stored under a name
  made of its content (``custom-<hash>``, ``as-of-DATE-<hash>`` with extra requirements), so
  that two stacks never share a column.

Every set is resolved with :data:`~shared.harness.libraries.UNDECLARED_IMPORTS` added (see
there), then installed by ``shared.harness.environment`` into an environment holding exactly
that resolution.

This module imports no torch; nox, the CLI and the workflows read it.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from shared.harness.catalog import case_names, load_case
from shared.harness.libraries import UNDECLARED_IMPORTS
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
    requirements: tuple[str, ...]  # what was asked (a lock file: nothing besides it)
    cases: tuple[str, ...]
    as_of: datetime.date | None = None  # resolve with nothing uploaded after this date
    lock: Path | None = None  # a lock file the installer syncs to as it is (no resolution)
    typed: tuple[str, ...] = ()  # what the user typed after `--` (a custom set), as typed

    @property
    def install_args(self) -> tuple[str, ...]:
        """The installer's options besides the requirements (uv's ``--exclude-newer``)."""
        return ("--exclude-newer", self.as_of.isoformat()) if self.as_of else ()

    @property
    def to_resolve(self) -> tuple[str, ...]:
        """The requirements with the :data:`UNDECLARED_IMPORTS` rule applied."""
        named = {Requirement(spec).name.lower() for spec in self.requirements}
        return self.requirements + tuple(p for p in UNDECLARED_IMPORTS if p not in named)

    @property
    def asked(self) -> dict:
        """What was asked, as the store's header records it."""
        asked: dict = {"requirements": list(self.requirements), "options": list(self.install_args)}
        if self.typed:
            asked["typed"] = list(self.typed)
            asked["files"] = [_file_record(path) for path in _requirement_files(self.typed)]
        if self.lock:
            asked["lock"] = _file_record(self.lock)
        asked["added_by_rule"] = [spec for spec in self.to_resolve if spec not in self.requirements]
        return asked


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
    names = tuple(Requirement(spec).name for spec in pinned_requirements())
    in_sweep = date in sweep_dates() and not extra
    cases = tuple(
        name for name in case_names() if not in_sweep or load_case(name).era_start <= date
    )
    name = f"{AS_OF_PREFIX}{date.isoformat()}"
    if extra:  # another stack than the date's own: a column of its own
        name += f"-{_content_hash(extra)}"
    return LibrarySet(name=name, requirements=_override(names, extra), cases=cases, as_of=date)


def set_date(name: str) -> datetime.date | None:
    """The date of a dated set's name (``as-of-DATE`` or ``as-of-DATE-<hash>``), else None."""
    found = re.match(rf"{AS_OF_PREFIX}(\d{{4}}-\d{{2}}-\d{{2}})", name)
    return datetime.date.fromisoformat(found.group(1)) if found else None


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


USAGE = (
    "name a set to run it: nox -s matrix -- torch==2.16.0 transformers==5.30.0, "
    "-- -r requirements.txt, -- --lock pylock.toml, or -- --as-of 2024-06-30"
)


REQUIREMENT_FILE_FLAGS = ("-r", "--requirement")  # pip's: the next argument is a file


def _file_record(path: Path) -> dict:
    """A file the user named, as the store's header keeps it: its name and its content's hash."""
    return {"file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def _requirement_files(arguments: tuple[str, ...]) -> list[Path]:
    """The files named by ``-r FILE`` among typed arguments."""
    return [Path(arguments[i + 1]) for i, word in enumerate(arguments[:-1])
            if word in REQUIREMENT_FILE_FLAGS]  # fmt: skip


def names_a_set(arguments: list[str]) -> bool:
    """Whether ``nox -s matrix -- ARGS`` names a library set (an option, or a requirement with a
    version or a URL) rather than cases: a bare word is a case's name."""
    return any(word.startswith("-") or re.search(r"[=<>!~@]", word) for word in arguments)


def custom_set(arguments: list[str]) -> LibrarySet:
    """What ``nox -s matrix -- ARGS`` names: requirements (typed, or ``-r FILE``) over the
    pinned set; ``--as-of DATE`` first for the stack of that date (extra requirements over it);
    or ``--lock FILE`` alone (a ``pylock.toml`` or a fully pinned requirements file) installed
    as it is. Stored under a name made of what was asked."""
    if arguments[:1] == ["--lock"]:
        if len(arguments) != 2:
            raise LibrarySetError("--lock takes one file and nothing else: --lock pylock.toml")
        lock = Path(arguments[1]).resolve()
        if not lock.is_file():
            raise LibrarySetError(f"--lock {arguments[1]}: no such file")
        name = f"{CUSTOM}-{hashlib.sha256(lock.read_bytes()).hexdigest()[:10]}"
        return LibrarySet(name, (), tuple(case_names()), lock=lock)
    if arguments[:1] == ["--as-of"]:
        if len(arguments) < 2:
            raise LibrarySetError("--as-of needs a date: --as-of 2024-06-30")
        dated = dated_set(arguments[1], _requested(arguments[2:]))
        return dataclasses.replace(dated, typed=tuple(arguments))
    requested = _requested(arguments)
    if not requested:
        raise LibrarySetError(USAGE)
    return LibrarySet(
        f"{CUSTOM}-{_content_hash(requested)}",
        _override(pinned_requirements(), requested),
        tuple(case_names()),
        typed=tuple(arguments),
    )


def _requested(arguments: list[str]) -> tuple[str, ...]:
    """Requirements typed, and those of each ``-r FILE``, in order."""
    requested: list[str] = []
    words = iter(arguments)
    for word in words:
        if word in REQUIREMENT_FILE_FLAGS:
            path = next(words, None)
            if path is None:
                raise LibrarySetError("-r needs a file: -r requirements.txt")
            requested += requirements_file(Path(path))
        elif word.startswith("-"):
            raise LibrarySetError(f"{word}: not an option of the matrix; {USAGE}")
        elif word in case_names():  # not sent to the resolver as a package to find
            raise LibrarySetError(
                f"{word} is a case, not a requirement: a stack named after -- runs every case; "
                f'one case on a stored set: nox -s "matrix(as-of-2024-07-15)" -- {word}'
            )
        else:
            requested.append(word)
    return tuple(requested)


def requirements_file(path: Path) -> list[str]:
    """The requirements of a requirements file as pip reads it: comments, line continuations
    and per-requirement options (``--hash``) dropped, ``-r`` files included; other options
    (an index, an editable, a URL) are refused, naming the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LibrarySetError(f"-r {path}: {exc.strerror}") from None
    found = []
    for number, line in enumerate(re.sub(r"\\\n", " ", text).splitlines(), 1):
        line = re.sub(r"(^|\s)#.*", "", line).strip()
        line = re.sub(r"\s--hash[=\s]\S+", "", line).strip()
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ")):
            found += requirements_file(path.parent / line.split(maxsplit=1)[1])
            continue
        try:
            if line.startswith("-"):
                raise ValueError("an installer option")
            found.append(str(Requirement(line)))
        except ValueError as exc:
            raise LibrarySetError(
                f"{path}:{number}: {line!r} is not a requirement the matrix takes ({exc})"
            ) from None
    return found


def _content_hash(requested: tuple[str, ...]) -> str:
    canonical = "\n".join(sorted(str(Requirement(spec)) for spec in requested))
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def _override(requirements: tuple[str, ...], requested: tuple[str, ...]) -> tuple[str, ...]:
    """``requirements`` with each package named in ``requested`` replaced by that request."""
    try:
        named = {Requirement(spec).name.lower() for spec in requested}
    except ValueError as exc:
        raise LibrarySetError(f"not a requirement: {exc}") from None
    kept = tuple(spec for spec in requirements if Requirement(spec).name.lower() not in named)
    return kept + requested
