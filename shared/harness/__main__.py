"""``python -m shared.harness COMMAND``: the gallery's one command line (see ``cli``)."""

import sys
import traceback

from shared.harness import INSTALL_HINT, ExitCode

try:
    from shared.harness.cli import main
except ModuleNotFoundError as missing:  # e.g. `nox --no-venv` in an environment without them
    print(
        f"gallery: error: {missing.name} is not installed for {sys.executable}; {INSTALL_HINT}",
        file=sys.stderr,
    )
    sys.exit(ExitCode.USAGE_ERROR)

try:
    sys.exit(main())
except BrokenPipeError:  # the reader went away (`... | head`): nothing more to say, no error
    sys.stderr.close()
    sys.exit(ExitCode.OK)
except Exception:  # noqa: BLE001 - not 1: that is "an anomaly", and the reports would be whole
    traceback.print_exc()
    print("gallery: internal error: the harness failed (above); its reports are incomplete",
          file=sys.stderr)  # fmt: skip
    sys.exit(ExitCode.INTERNAL_ERROR)
