"""``python -m shared.culprit``: diagnose your own script (``run``), audit your own model, or
list the hazard patterns."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

# The exit codes, as the harness's ExitCode has them (this API never imports the harness): 0 no
# hazard (``run``: the script's own status), 1 a hazard found, 2 bad input (options, a script or a
# factory that is not there, torch missing).
HAZARD_FOUND, USAGE_ERROR = 1, 2

try:
    from torch import nn

    from shared.culprit.audit import format_audit
    from shared.culprit.diagnose import run
    from shared.culprit.finders import format_hazards, hazards
    from shared.hazards import FINDERS, HAZARDS
except ModuleNotFoundError as missing:  # no torch in this environment: bad input, not a hazard
    print(f"python -m shared.culprit: error: {missing.name} is not installed for {sys.executable}",
          file=sys.stderr)  # fmt: skip
    raise SystemExit(USAGE_ERROR) from None

RUN_USAGE = """usage: python -m shared.culprit run [OPTIONS] SCRIPT [ARGS...]
       python -m shared.culprit run [OPTIONS] -m MODULE [ARGS...]

Run a script (or a module, as python -m does) unmodified under the gallery's global watchers, as
python -m cProfile runs one; report the first dtype/device mismatch, inf/NaN producer or hazard
on stderr: the module, the mechanism, and the case that documents it with its fix. The script's
own output and exit status pass through unchanged.
options:
  --backward   also watch gradients: the first non-finite one
  --every-call watch the torch calls inside every call of a model, not only its first three
               and those given new kinds of inputs
  --json FILE  write {"problem": null} or {"problem": {kind, module, file, line, detail,
               mechanism, case, family}} (and "notes") to FILE"""


def run_main(argv: list[str]) -> int:
    """``python -m shared.culprit run ...``: options up to the script; the rest is its own."""
    backward, every_call, json_path, module = False, False, None, False
    while argv and argv[0].startswith("-"):
        option, argv = argv[0], argv[1:]
        if option == "--backward":
            backward = True
        elif option == "--every-call":
            every_call = True
        elif option == "--json" and argv:
            json_path, argv = argv[0], argv[1:]
        elif option.startswith("--json="):
            json_path = option.removeprefix("--json=")
        elif option == "-m":
            module = True
            break
        elif option in ("-h", "--help"):
            print(RUN_USAGE)
            return 0
        else:
            print(f"{RUN_USAGE}\nerror: unknown option {option}", file=sys.stderr)
            return USAGE_ERROR
    if not argv:
        print(f"{RUN_USAGE}\nerror: no script given", file=sys.stderr)
        return USAGE_ERROR
    if not module and not Path(argv[0]).is_file():
        print(f"error: no script {argv[0]}", file=sys.stderr)
        return USAGE_ERROR
    return run(argv[0], argv[1:], module=module, backward=backward, json_path=json_path,
               every_call=every_call)


def main(argv: list[str] | None = None) -> int:
    """``python -m shared.culprit package.module:factory``: audit the model the factory returns;
    ``python -m shared.culprit run SCRIPT [ARGS...]``: diagnose a script."""
    import argparse

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        return run_main(argv[1:])

    parser = argparse.ArgumentParser(prog="python -m shared.culprit", description=main.__doc__)
    parser.add_argument("factory", nargs="?", help="module:callable returning an nn.Module")
    parser.add_argument("--list", action="store_true", help="list the hazard patterns")
    args = parser.parse_args(argv)
    if args.list:
        for kind, hazard in HAZARDS.items():
            finders = "; ".join(str(FINDERS[finder]) for finder in hazard.found_by)
            print(f"{kind}: {hazard.meaning} (see cases/{hazard.case}; found by {finders}; "
                  f"fix: {hazard.fix})")  # fmt: skip
        return 0
    module_name, _, attribute = (args.factory or "").partition(":")
    if not attribute:
        parser.error("give MODULE:FACTORY, e.g. my_project.models:build_model")
    try:  # a factory that is not there is bad input (2), never "a hazard found" (1)
        factory = getattr(importlib.import_module(module_name), attribute)
    except ModuleNotFoundError as exc:
        parser.error(f"cannot import {module_name!r}: {exc} (is its folder on PYTHONPATH?)")
    except AttributeError:
        parser.error(f"{module_name} has no {attribute!r}")
    model = factory()
    if not isinstance(model, nn.Module):
        parser.error(f"{args.factory} returned a {type(model).__name__}, not an nn.Module")
    print(format_audit(model, odd_only=True))
    print(format_hazards(model))
    return HAZARD_FOUND if hazards(model) else 0


if __name__ == "__main__":
    raise SystemExit(main())
