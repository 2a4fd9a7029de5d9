"""The harness: runs case variants and judges them. Case scripts never import from here.

- ``catalog``: the case folders and their ``case.toml`` (validated on load).
- ``report``: the one format of what a run observed (per process, per variant, per case).
- ``runner`` / ``executor``: each variant in a fresh process, with a time limit.
- ``verdicts``: the verdict kinds, the expectations case.toml states, and ``judge``:
  observation + expectation -> REPRODUCED, PASSED, UNAFFECTED, SKIPPED or an anomaly.
- ``steps``: a run's named steps (plan -> run -> judge -> report); ``lines`` formats what they
  show.
- ``cli``: ``python -m shared.harness run|list|matrix|site|benchmark`` (parses, calls the steps).
- ``matrix``: the regression matrix's tables; ``site``: the static site; ``benchmark``.
"""

import enum


class ExitCode(enum.IntEnum):
    """What every command of ``python -m shared.harness`` exits with (as pytest's ExitCode); the
    README's "Exit codes" lists the same. 4 is unused (pytest's own usage error)."""

    OK = 0
    """Every verdict as documented (a check, a bisection, an explain that names a case: done)."""
    ANOMALIES = 1
    """A verdict is not the documented one; the reports are whole. Elsewhere a problem found:
    a stale README (``readme --check``), a site check that failed, a flaky bisection, a changed
    matrix table (``matrix check``)."""
    USAGE_ERROR = 2
    """Bad input, before anything is judged: an unknown case or variant, bad arguments, a
    ``case.toml`` that does not load, a missing or unimportable package, a bad library set
    (every :class:`UsageError`, ``CaseError`` and ``LibrarySetError`` a command raises)."""
    INTERNAL_ERROR = 3
    """The harness itself failed (an exception of its own code, shown): its reports are
    incomplete. Never 1: a matrix set accepts anomalies and stores them, not a broken run."""
    NO_MATCH = 5
    """``explain``: no documented case (at most a family), as pytest's NO_TESTS_COLLECTED."""


class UsageError(Exception):
    """Bad input: ``cli.main`` shows each argument as a ``gallery: error:`` line and exits
    :attr:`ExitCode.USAGE_ERROR` (as pytest maps its UsageError), whichever command raised it."""


INSTALL_HINT = (
    "install the pinned set (pyproject.toml, group 'cases'): let nox do it (drop --no-venv), "
    "or offline: pip install --no-index --find-links WHEELS_DIR <the pinned packages>"
)
