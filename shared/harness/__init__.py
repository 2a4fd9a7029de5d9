"""The harness: runs case variants and judges them. Case scripts never import from here.

- ``catalog``: the case folders and their ``case.toml`` (validated on load).
- ``report``: the one format of what a run observed (per process, per variant, per case).
- ``runner`` / ``executor``: each variant in a fresh process, with a time limit.
- ``verdicts``: the verdict kinds, the expectations case.toml states, and ``judge``:
  observation + expectation -> REPRODUCED, PASSED, UNAFFECTED, SKIPPED or an anomaly.
- ``cli``: ``python -m shared.harness run|list|matrix|site|benchmark``.
- ``matrix``: the regression matrix's tables; ``site``: the static site; ``benchmark``.
"""

import enum


class ExitCode(enum.IntEnum):
    """What every command of ``python -m shared.harness`` exits with (as pytest's ExitCode)."""

    OK = 0
    ANOMALIES = 1  # a verdict is not the documented one (a site check, a bisection: a problem)
    USAGE_ERROR = 2  # bad input: unknown case or variant, broken metadata, missing packages
    INTERNAL_ERROR = 3  # the harness itself failed: its reports are incomplete
    NO_MATCH = 5  # explain: no documented case (at most a family), as pytest's NO_TESTS_COLLECTED


INSTALL_HINT = (
    "install the pinned set (pyproject.toml, group 'cases'): let nox do it (drop --no-venv), "
    "or offline: pip install --no-index --find-links WHEELS_DIR <the pinned packages>"
)
