"""``python -m shared.harness site build|check``: the static site's commands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shared.harness import ExitCode
from shared.harness.paths import (
    CASES_DIR,
    CUDA_DIR,
    MATRIX_DIR,
    RUNS_DIR,
    SCREENSHOT_DIR,
    SITE_DIR,
)


def add_commands(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="site_command", required=True)
    build = commands.add_parser("build", help="write the site from the case folders and reports")
    check = commands.add_parser("check", help="load every page in headless Chromium")
    for command in (build, check):
        command.add_argument("--out", type=Path, default=SITE_DIR,
                             help="the site folder")  # fmt: skip
        command.add_argument("--screenshot", type=Path,
                             default=SCREENSHOT_DIR,
                             help="where the check saves a PNG per page")  # fmt: skip
        command.set_defaults(handler=site_command)
    build.add_argument("--runs", type=Path, default=RUNS_DIR,
                       help="gallery run reports")  # fmt: skip
    build.add_argument("--matrix", type=Path, default=MATRIX_DIR,
                       help="version matrices")  # fmt: skip
    build.add_argument("--cuda", type=Path, default=CUDA_DIR,
                       help="CUDA run reports")  # fmt: skip
    build.add_argument("--cases-dir", type=Path, default=CASES_DIR, help=argparse.SUPPRESS)
    build.add_argument("--check", action="store_true",
                       help="then check it in headless Chromium (Debian's chromium)")  # fmt: skip


def site_command(args: argparse.Namespace) -> ExitCode:
    # Imported here: `site build` needs no browser stack, and other commands no jinja2.
    try:
        from shared.harness.site.build import SiteError, build
    except ModuleNotFoundError as missing:
        print(f"site: error: {missing.name} is not installed for {sys.executable}; install "
              "the 'site' group of pyproject.toml", file=sys.stderr)  # fmt: skip
        return ExitCode.USAGE_ERROR
    try:
        if args.site_command == "build":
            pages = build(args.out, args.runs, args.matrix, args.cuda, args.cases_dir)
            print(f"site: built {len(pages)} pages in {args.out}")
            if not args.check:
                return ExitCode.OK
        from shared.harness.site.check import check

        problems = check(args.out, args.screenshot)
    except SiteError as exc:
        print(f"site: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    for problem in problems:
        print(f"site: FAILED {problem}", file=sys.stderr)
    if problems:
        print(f"site: check FAILED: {len(problems)} problem(s)", file=sys.stderr)
        return ExitCode.ANOMALIES
    print(f"site: check OK; screenshots in {args.screenshot}")
    return ExitCode.OK
