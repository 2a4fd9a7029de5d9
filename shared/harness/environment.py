"""The environment a library set runs in: installed as exactly that set, described, and checked.

- :func:`install_commands`: the installer's commands that make an environment hold exactly one
  set: its requirements (with :data:`~shared.harness.libraries.UNDECLARED_IMPORTS`) resolved
  to exact pins, then ``uv pip sync``, which also removes whatever an earlier set left (``uv pip
  install`` only adds, so a reused environment would not be the set's stack); a lock file is
  synced to as it is. nox's matrix session and the tests run these same commands.
- :func:`installed_packages`: every distribution an interpreter sees, with its version.
- :func:`import_failures`: each installed library the cases import
  (:data:`~shared.harness.libraries.CASE_LIBRARIES`) imported
  in a child process of the environment's interpreter. A library that cannot be imported is an
  environment error, never a verdict: the matrix stops with exit 2 naming the set, the library
  and the missing module (or name) before any case runs; a plain ``run`` stops the same way
  (``steps.run``: what its parent's preload could not import, and in a child what it must not).

No torch here: the child processes import the libraries, this module does not.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from shared.harness.libraries import CASE_LIBRARIES, UNDECLARED_IMPORTS
from shared.harness.library_sets import LibrarySet


def install_commands(chosen: LibrarySet, python: str, uv: str, scratch: Path) -> list[list[str]]:
    """The commands that make the environment of ``python`` hold exactly ``chosen``.

    Writes the set's requirements to ``scratch`` (the resolved pins land beside them). The
    index is the installer's own configuration (``UV_INDEX_URL``, ``uv.toml``): named nowhere
    here.
    """
    target = ["--python", python]
    if chosen.lock:
        # The lock as the team keeps it, then the rule's packages where the lock lacks them.
        return [
            [uv, "pip", "sync", "-q", *target, str(chosen.lock)],
            [uv, "pip", "install", "-q", *target, *UNDECLARED_IMPORTS],
        ]
    scratch.mkdir(parents=True, exist_ok=True)
    wanted, pins = scratch / f"{chosen.name}.in", scratch / f"{chosen.name}.txt"
    wanted.write_text("\n".join(chosen.to_resolve) + "\n", encoding="utf-8")
    return [
        [uv, "pip", "compile", "-q", str(wanted), "-o", str(pins), *target, *chosen.install_args],
        [uv, "pip", "sync", "-q", *target, str(pins)],
    ]


_LIST_DISTRIBUTIONS = """
import importlib.metadata, json
print(json.dumps({d.metadata["Name"]: d.version for d in importlib.metadata.distributions()}))
"""


def installed_packages(python: str = sys.executable) -> dict[str, str]:
    """Every distribution ``python`` sees, name -> version, sorted by lowercase name."""
    listed = subprocess.run(
        [python, "-c", _LIST_DISTRIBUTIONS], capture_output=True, text=True, check=True
    )
    found = json.loads(listed.stdout)
    return {name: found[name] for name in sorted(found, key=str.lower)}


def platform_description(python: str = sys.executable) -> dict[str, str]:
    """The interpreter's version and the machine's kind (CUDA devices come from the run)."""
    version = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return {"python": version, "machine": f"{platform.system()} {platform.machine()}"}


@dataclass(frozen=True)
class ImportFailure:
    """A library installed in the environment that its interpreter cannot import."""

    package: str
    version: str
    error: str  # "Type: first line", as raised
    missing_module: str | None  # the module a ModuleNotFoundError names, else None

    @classmethod
    def of(cls, package: str, version: str, exc: BaseException) -> ImportFailure:
        """From what importing the package raised (in this process)."""
        return cls(package, version, *tell_failure(exc))

    def describe(self, library_set: str = "this environment", remedy: str = "") -> str:
        """One line naming the set (or the environment), the library, what is missing, and
        what to do (``remedy``: how to add a missing module where it is wanted)."""
        missing = (f"no module named {self.missing_module!r} ({self.error})"
                   if self.missing_module else self.error)  # fmt: skip
        todo = f"; {remedy}" if remedy and self.missing_module else ""
        return (
            f"{library_set}: {self.package} {self.version} cannot be imported: {missing}; "
            f"an environment error, not a verdict: no case was run{todo}"
        )


# How an import failure is told, here and in the child that imports for another interpreter (it
# cannot import the harness, so both run this source): the error's first line, and the error it
# wraps when there is one (diffusers' "Failed to import ... (look up to see its traceback)"
# says nothing of its cause itself); the module a ModuleNotFoundError names, at either end.
_TELL_FAILURE = """
def tell_failure(exc):
    def first_line(error):
        lines = str(error).strip().splitlines()
        return type(error).__name__ + ": " + (lines[0] if lines else "")
    root, seen = exc, {id(exc)}
    while (root.__cause__ or root.__context__) is not None:
        inner = root.__cause__ or root.__context__
        if id(inner) in seen:
            break
        root = inner
        seen.add(id(root))
    told = first_line(exc) + ("" if root is exc else " (from " + first_line(root) + ")")
    missing = [e.name for e in (root, exc) if isinstance(e, ModuleNotFoundError)]
    return [told, missing[0] if missing else None]
"""
_namespace: dict = {}
exec(_TELL_FAILURE, _namespace)  # noqa: S102 - our own source, shared with the child below
tell_failure = _namespace["tell_failure"]

# Each library in turn, in one child: a failure is caught and recorded, the next is tried.
_IMPORT_EACH = _TELL_FAILURE + """
import importlib, json, sys
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as exc:
        failed[name] = tell_failure(exc)
print("\\n" + json.dumps(failed))
"""


def import_failures(
    python: str = sys.executable, packages: dict[str, str] = CASE_LIBRARIES
) -> list[ImportFailure]:
    """Import each of ``packages`` (distribution name -> import name) installed for ``python``,
    in one child process of its own (its import noise captured, not shown); return those that
    fail, in ``packages`` order."""
    if not packages:
        return []
    installed = {name.lower(): version for name, version in installed_packages(python).items()}
    present = [name for name in packages if name.lower() in installed]
    if not present:
        return []
    modules = [packages[name] for name in present]
    child = subprocess.run([python, "-c", _IMPORT_EACH, *modules], capture_output=True, text=True)
    if child.returncode != 0:  # the child itself died (a crash inside an import)
        last = (child.stderr.strip().splitlines() or ["no output"])[-1]
        return [ImportFailure(name, installed[name.lower()], f"the importing process died: "
                              f"{last}", None) for name in present]  # fmt: skip
    failed = json.loads(child.stdout.strip().splitlines()[-1])
    return [
        ImportFailure(name, installed[name.lower()], *failed[packages[name]])
        for name in present
        if packages[name] in failed
    ]
