"""Not a case: a script that fails on its own, with nothing torch-related: traceback and exit 1."""

raise ValueError("the script's own error")
