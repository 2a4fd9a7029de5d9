"""``python -m shared.harness COMMAND``: the gallery's one command line (see ``cli``)."""

import sys

from shared.harness import INSTALL_HINT

try:
    from shared.harness.cli import main
except ModuleNotFoundError as missing:  # e.g. `nox --no-venv` in an environment without them
    print(
        f"gallery: error: {missing.name} is not installed for {sys.executable}; {INSTALL_HINT}",
        file=sys.stderr,
    )
    sys.exit(2)

sys.exit(main())
