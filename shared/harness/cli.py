"""The harness's command line: ``python -m shared.harness COMMAND`` (run, list, explain, matrix,
bisect, site, readme, benchmark): it parses the arguments and calls the command; ``run``'s steps
are ``steps``.

``run`` prints the library versions and devices first, then one line per variant (verdict,
device, seconds, the error seen or the measured figure) and a summary, and writes a JSON report
per case. Every command exits with one of :class:`shared.harness.ExitCode` (0 OK, 1 anomalies, 2 bad
input, 3 the harness failed, 5 explain found no case).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from shared.harness import INSTALL_HINT, ExitCode, UsageError, steps
from shared.harness.case import Case, CaseError
from shared.harness.catalog import case_names, load_case
from shared.harness.library_sets import LibrarySetError
from shared.harness.paths import CASES_DIR, RUNS_DIR
from shared.harness.verdicts import installed_version
from shared.tiny_models import PERTURB_VARIABLE, perturbation

# Every case needs torch; other libraries are each case's `requires` (a case whose library is
# missing, as in an upstream-era set, is SKIPPED with the reason).
REQUIRED_PACKAGES = ("torch",)


def main(argv: list[str] | None = None) -> int:
    """Every command exits with one of ExitCode's; bad input, wherever a command meets it, is
    the one mapping below: a ``gallery: error:`` line and exit 2 (as pytest's UsageError)."""
    args = _parse_args(argv)  # argparse itself exits 2 on arguments it cannot parse
    try:
        return int(ExitCode(args.handler(args)))
    except (UsageError, CaseError, LibrarySetError) as exc:
        for line in exc.args or ("bad input",):
            print(f"gallery: error: {line}", file=sys.stderr)
        return ExitCode.USAGE_ERROR


def _run_or_list(args: argparse.Namespace) -> ExitCode:
    names = case_names(args.cases_dir) if args.all or not args.cases else args.cases
    cases = [load_case(name, args.cases_dir) for name in names]
    if args.command == "list":
        for case in cases:
            print(f"{case.name:22} {case.title}  ({len(case.variants)} variants)")
        return ExitCode.OK
    missing = [name for name in REQUIRED_PACKAGES if not installed_version(name)]
    if missing:
        raise UsageError(f"{', '.join(missing)} not installed for {sys.executable}; {INSTALL_HINT}")
    if args.only:
        cases = [_only_variants(case, args.only) for case in cases]
        ran = {name for case in cases for v in case.variants for name in (v.name, _key(case, v))}
        unknown = set(args.only) - ran
        if unknown:
            raise UsageError(f"no variant named {sorted(unknown)}")
        cases = [case for case in cases if case.variants]
    absent = sorted({f"{name} ({case.name}/{variant.name})" for case in cases
                     for variant in case.variants for name in variant.requires.packages
                     if args.complete_env and not installed_version(name)})  # fmt: skip
    if absent:
        raise UsageError(f"--complete-env, but not installed for {sys.executable}: "
                         f"{', '.join(absent)}; {INSTALL_HINT}")  # fmt: skip
    if args.perturb:  # read by shared.tiny_models in every variant process (forked or spawned)
        os.environ[PERTURB_VARIABLE] = args.perturb
    return steps.run(cases, args.jobs, args.report_dir, require_cuda=args.require_cuda)


def _key(case: Case, variant) -> str:
    return f"{case.name}/{variant.name}"


def _only_variants(case: Case, names: list[str]) -> Case:
    """The variants named plainly (in every case) or as CASE/VARIANT."""
    chosen = tuple(v for v in case.variants if v.name in names or _key(case, v) in names)
    return dataclasses.replace(case, variants=chosen)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    from shared.harness import benchmark, bisect, explain, matrix, readme
    from shared.harness.site import cli as site_cli

    parser = argparse.ArgumentParser(
        prog="python -m shared.harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in (
        ("run", "run cases: broken must fail as documented, fixed must pass"),
        ("list", "list the cases"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.set_defaults(handler=_run_or_list)
        command.add_argument("cases", nargs="*", help="case names (default: all)")
        command.add_argument("--all", action="store_true", help="every case under cases/")
        command.add_argument("--cases-dir", type=Path, default=CASES_DIR, help=argparse.SUPPRESS)
        if name == "run":
            command.add_argument(
                "--jobs", type=int, default=os.cpu_count() or 1, help="variants run at once"
            )
            command.add_argument(
                "--report-dir", type=Path, default=RUNS_DIR, help="where JSON reports go"
            )
            command.add_argument(
                "--only",
                action="append",
                metavar="[CASE/]VARIANT",
                help="run only this variant (of every case named, or of CASE)",
            )
            command.add_argument(
                "--perturb", type=perturbation, metavar="{seed,seed:N,low,high}",
                help="run every tiny model with another seed (seed; seed:N moves every seed by "
                "N) or each knob at the low or high end of its realistic range: a silent verdict "
                f"must not change (sets {PERTURB_VARIABLE} for every variant)",
            )  # fmt: skip
            command.add_argument(
                "--require-cuda", action="store_true", help="refuse to run without a CUDA GPU"
            )
            command.add_argument(
                "--complete-env",
                action="store_true",
                help="a package a variant declares and this environment lacks is exit 2, not a "
                "skip (nox --no-venv: the environment must hold the pinned set)",
            )
    matrix.add_commands(commands.add_parser("matrix", help="the regression matrix's tables"))
    bisect.add_arguments(
        commands.add_parser("bisect", help="the first release where a verdict changes")
    )
    site_cli.add_commands(commands.add_parser("site", help="build or check the static site"))
    explain.add_arguments(
        commands.add_parser("explain", help="which documented case an error or symptom is")
    )
    readme.add_arguments(
        commands.add_parser("readme", help="the READMEs' facts, from case.toml and the store")
    )
    benchmark.add_arguments(commands.add_parser("benchmark", help="time the gallery"))
    args = parser.parse_args(argv)
    if args.command == "run" and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args
