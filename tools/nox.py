"""Run nox for this project from any Python 3.11+, installing nothing outside the clone.

    python3 tools/nox.py -s case-minicpm      # any nox arguments: -l, -s tests, -t cases, ...

Distribution Pythons (Debian 12, Ubuntu 23.04+) refuse `pip install` outside a virtual
environment (PEP 668, "externally-managed-environment"). So this script makes a throwaway
virtual environment of its own in `.nox/_bootstrap/` (git-ignored; delete it to start over) with
the standard library's venv and the pip that ensurepip bundles, installs pyproject.toml's `nox`
group (nox and uv, pinned) into it by name from your package index, and hands its arguments to
`python -m nox` there. Later runs find the environment ready and start nox at once; a changed
pin or interpreter rebuilds it. pip honours your pip configuration (index, mirrors, certificates).

Debian and Ubuntu ship ensurepip in a package of its own (`python3-venv`); without it this
script says so in one line instead of failing halfway.

This file parses under old Pythons too (no f-strings, annotations or keyword-only arguments),
so that a Python older than pyproject's `requires-python` gets one line naming the version
needed instead of a traceback.
"""

from __future__ import print_function

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".nox", "_bootstrap")
GROUP = "nox"
NAME = "tools/nox.py"


def say(message):
    print(NAME + ": " + message, file=sys.stderr)
    sys.stderr.flush()


def fail(message, code=2):
    say(message)
    sys.exit(code)


def required_python(pyproject_text):
    """(major, minor) from `requires-python = ">=X.Y"`, or None when it says something else."""
    match = re.search(r'^requires-python\s*=\s*"\s*>=\s*(\d+)\.(\d+)', pyproject_text, re.M)
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_python(version_info, executable, pyproject_text):
    """None when this Python is new enough, else the one line that says what is needed."""
    needed = required_python(pyproject_text)
    if needed is None or tuple(version_info[:2]) >= needed:
        return None
    wanted = "%d.%d" % needed
    have = "%d.%d.%d" % tuple(version_info[:3])
    return (
        "this project needs Python %s or newer (pyproject.toml: requires-python >=%s), but %s "
        "is Python %s; run this command with a newer one, e.g. python%s %s ..."
        % (wanted, wanted, executable, have, wanted, NAME)
    )


def venv_python():
    if os.name == "nt":
        return os.path.join(VENV, "Scripts", "python.exe")
    return os.path.join(VENV, "bin", "python")


def group_pins():
    """The requirements of pyproject.toml's `nox` group (nox and uv, pinned)."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)["dependency-groups"][GROUP]


def wanted_stamp():
    """What the environment was built from; a difference rebuilds it."""
    return {"base": os.path.realpath(sys.executable), "python": sys.version, "group": group_pins()}


def ensure_environment():
    """Create (or rebuild) .nox/_bootstrap with pip and the `nox` group; return its python."""
    stamp_path = os.path.join(VENV, "bootstrap.json")
    stamp = wanted_stamp()
    try:
        with open(stamp_path) as handle:
            if json.load(handle) == stamp and os.path.exists(venv_python()):
                return venv_python()
    except (OSError, ValueError):
        pass
    import importlib.util
    import venv

    if importlib.util.find_spec("ensurepip") is None:
        fail(
            "%s has no ensurepip, which venv needs to put pip in an environment; on Debian or "
            "Ubuntu: apt-get install python3-venv (or run with another Python 3.11+)"
            % sys.executable
        )
    say(
        "setting up nox in %s (pyproject.toml group '%s': %s)"
        % (os.path.relpath(VENV, ROOT), GROUP, " ".join(stamp["group"]))
    )
    venv.EnvBuilder(clear=True, with_pip=True, symlinks=os.name != "nt").create(VENV)
    python = venv_python()
    command = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    # pip's output goes to stderr: stdout stays nox's own (`nox -l --json` is parsed by CI).
    if subprocess.call(command + stamp["group"], cwd=ROOT, stdout=sys.stderr.fileno()) != 0:
        fail("failed: " + " ".join(command + stamp["group"]), 1)
    with open(stamp_path, "w") as handle:
        json.dump(stamp, handle, indent=2)
    return python


def main(argv):
    with open(os.path.join(ROOT, "pyproject.toml")) as handle:
        problem = check_python(sys.version_info, sys.executable, handle.read())
    if problem:
        fail(problem)
    python = ensure_environment()
    command = [python, "-m", "nox"] + list(argv)
    os.chdir(ROOT)
    if os.name == "nt":
        sys.exit(subprocess.call(command))
    os.execv(python, command)


if __name__ == "__main__":
    main(sys.argv[1:])
