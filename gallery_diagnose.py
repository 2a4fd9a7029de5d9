"""``python -m gallery_diagnose SCRIPT [ARGS...]``: ``python -m shared.culprit run`` under a name
no project shadows. A project with its own top-level ``shared`` package hides the gallery's from
``python -m shared.culprit`` (its folder comes first on sys.path); this loads the gallery's own
``shared`` from beside this file, then the script imports its own."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
theirs = {name: sys.modules.pop(name) for name in list(sys.modules)
          if name == "shared" or name.startswith("shared.")}  # fmt: skip
sys.path.insert(0, HERE)
try:
    from shared.culprit.__main__ import main
finally:
    sys.path.remove(HERE)
    sys.modules.update(theirs)

if __name__ == "__main__":
    raise SystemExit(main(["run", *sys.argv[1:]]))
