"""``python -m shared.culprit``: audit your own model, or list the hazard patterns."""

from __future__ import annotations

import importlib

from torch import nn

from shared.culprit.audit import format_audit
from shared.culprit.finders import format_hazards, hazards
from shared.hazards import FINDERS, HAZARDS


def main(argv: list[str] | None = None) -> int:
    """``python -m shared.culprit package.module:factory``: audit the model the factory returns."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m shared.culprit", description=main.__doc__)
    parser.add_argument("factory", nargs="?", help="module:callable returning an nn.Module")
    parser.add_argument("--list", action="store_true", help="list the hazard patterns")
    args = parser.parse_args(argv)
    if args.list:
        for kind, hazard in HAZARDS.items():
            finders = "; ".join(str(FINDERS[finder]) for finder in hazard.found_by)
            print(f"{kind}: {hazard.meaning} (see cases/{hazard.case}; found by {finders})")
        return 0
    module_name, _, attribute = (args.factory or "").partition(":")
    if not attribute:
        parser.error("give MODULE:FACTORY, e.g. my_project.models:build_model")
    model = getattr(importlib.import_module(module_name), attribute)()
    if not isinstance(model, nn.Module):
        parser.error(f"{args.factory} returned a {type(model).__name__}, not an nn.Module")
    print(format_audit(model, odd_only=True))
    print(format_hazards(model))
    return 1 if hazards(model) else 0


if __name__ == "__main__":
    raise SystemExit(main())
