"""The harness's command line: ``python -m shared.harness COMMAND`` (run, list, explain, matrix,
bisect, site, readme, benchmark).

``run`` prints the library versions and devices first, then one line per variant (verdict,
device, seconds, the error seen or the measured figure) and a summary, and writes a JSON report
per case. Exit codes are :class:`ExitCode`: 1 when any verdict is an anomaly, 2 on bad input
(unknown case, broken metadata, missing packages).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import enum
import importlib.metadata
import os
import platform as python_platform
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from shared.distributed import rank_backend, torchrun_ranks
from shared.harness import INSTALL_HINT
from shared.harness.catalog import (
    VERSIONED_PACKAGES,
    Case,
    CaseError,
    case_names,
    load_case,
)
from shared.harness.paths import CASES_DIR, RUNS_DIR, WORK_DIR
from shared.harness.report import EXPECTED_KINDS, REPRODUCED, SKIPPED, CaseReport, Verdict
from shared.harness.runner import Job, preload, probe_cuda, run_jobs, start_method
from shared.harness.verdicts import Platform, judge, skip_reason


class ExitCode(enum.IntEnum):
    """What the harness's commands exit with (as pytest's ExitCode)."""

    OK = 0
    ANOMALIES = 1  # a verdict is not the documented one (or a site check found problems)
    USAGE_ERROR = 2  # bad input: unknown case or variant, broken metadata, missing packages
    INTERNAL_ERROR = 3  # the harness itself failed: its reports are incomplete


KIND_WIDTH, NAME_WIDTH = 14, 26
# Every case needs torch; other libraries are each case's `requires` (a case whose library is
# missing, as in an upstream-era set, is SKIPPED with the reason).
REQUIRED_PACKAGES = ("torch",)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    return int(args.handler(args))


def _run_or_list(args: argparse.Namespace) -> ExitCode:
    try:
        names = case_names(args.cases_dir) if args.all or not args.cases else args.cases
        cases = [load_case(name, args.cases_dir) for name in names]
    except CaseError as exc:
        print(f"gallery: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    if args.command == "list":
        for case in cases:
            print(f"{case.name:22} {case.title}  ({len(case.variants)} variants)")
        return ExitCode.OK
    missing = [name for name in REQUIRED_PACKAGES if not _version(name)]
    if missing:
        print(
            f"gallery: error: {', '.join(missing)} not installed for {sys.executable}; "
            f"{INSTALL_HINT}",
            file=sys.stderr,
        )
        return ExitCode.USAGE_ERROR
    if args.only:
        cases = [_only_variants(case, args.only) for case in cases]
        unknown = set(args.only) - {v.name for case in cases for v in case.variants}
        if unknown:
            print(f"gallery: error: no variant named {sorted(unknown)}", file=sys.stderr)
            return ExitCode.USAGE_ERROR
    absent = sorted({f"{name} ({case.name}/{variant.name})" for case in cases
                     for variant in case.variants for name in variant.requires.packages
                     if args.complete_env and not _version(name)})  # fmt: skip
    if absent:
        print(f"gallery: error: --complete-env, but not installed for {sys.executable}: "
              f"{', '.join(absent)}; {INSTALL_HINT}", file=sys.stderr)  # fmt: skip
        return ExitCode.USAGE_ERROR
    return run(cases, args.jobs, args.report_dir, require_cuda=args.require_cuda)


def _only_variants(case: Case, names: list[str]) -> Case:
    return dataclasses.replace(case, variants=tuple(v for v in case.variants if v.name in names))


def run(cases: list[Case], parallel: int, report_dir: Path, require_cuda: bool = False) -> ExitCode:
    started = time.perf_counter()
    method = start_method()
    if method == "fork":
        preload(case.folder for case in cases)
    platform = _platform()
    if require_cuda and not platform.cuda_devices:
        print("gallery: error: --require-cuda, but no CUDA GPU is visible here", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    _print_header(platform, method, time.perf_counter() - started, parallel)

    verdicts: dict[str, list[Verdict | None]] = {case.name: [] for case in cases}
    # A folder of this run's own: two runs at once (a matrix set, a test) never share one.
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=WORK_DIR))
    jobs = []
    threads = max(1, (os.cpu_count() or 1) // parallel)
    for case in cases:
        for variant in case.variants:
            ranks, device = 1, platform.default_device
            if variant.launcher == "torchrun":
                ranks = torchrun_ranks(variant.ranks, platform.cuda_devices)
                device = rank_backend(ranks, platform.cuda_devices)[1]
            reason = skip_reason(variant.requires, platform, device)
            if reason:
                verdicts[case.name].append(Verdict(SKIPPED, reason, variant=variant.name))
            else:
                jobs.append(Job(case, variant, run_dir / case.name / variant.name, threads, ranks))
                verdicts[case.name].append(None)  # filled in below

    results = run_jobs(jobs, parallel)
    for case in cases:
        print(f"\n{case.name}: {case.title}\n  upstream: {case.issue}")
        case_verdicts = verdicts[case.name]
        for index, verdict in enumerate(case_verdicts):
            if verdict is None:
                job, outcome = next(results)
                verdict = judge(job.variant, outcome, platform)
                verdict.variant = job.variant.name
                case_verdicts[index] = verdict
            _print_verdict(verdict)
        _print_case_summary(case.name, case_verdicts)
        _case_report(case, platform, case_verdicts).write(report_dir)

    shutil.rmtree(run_dir, ignore_errors=True)
    all_verdicts = [v for case_verdicts in verdicts.values() for v in case_verdicts]
    return _print_total(all_verdicts, time.perf_counter() - started)


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
                "--only", action="append", metavar="VARIANT", help="run only this variant"
            )
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


def _platform() -> Platform:
    versions = {name: _version(name) for name in VERSIONED_PACKAGES}
    return Platform(versions=versions, cuda_device_names=tuple(probe_cuda()))


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _print_header(platform: Platform, method: str, preload_s: float, parallel: int) -> None:
    packages = " | ".join(
        f"{name} {version or 'not installed'}" for name, version in platform.versions.items()
    )
    print(f"Python {python_platform.python_version()} | {packages}")
    if platform.cuda_devices:
        names = ", ".join(platform.cuda_device_names)
        print(f"devices: {platform.cuda_devices} CUDA GPU(s) ({names}): variants run on CUDA")
    else:
        print("devices: no CUDA GPU: variants run on the CPU; CUDA-only ones are SKIPPED")
    how = (
        f"forked from one parent (imports took {preload_s:.1f} s)"
        if method == "fork"
        else ("each in a new interpreter")
    )
    print(f"variants: fresh process each, {how}, up to {parallel} at a time")


def _print_verdict(verdict: Verdict) -> None:
    seconds = f"{verdict.seconds:5.1f}s" if verdict.kind != SKIPPED else "     -"
    print(f"  {verdict.kind:<{KIND_WIDTH}} {verdict.variant:<{NAME_WIDTH}} {verdict.device:<5} "
          f"{seconds}  {verdict.detail}")  # fmt: skip
    if verdict.culprit:
        print(f"  {'':<{KIND_WIDTH}} culprit: {verdict.culprit['description']}")
    if verdict.producer:
        print(f"  {'':<{KIND_WIDTH}} first inf/NaN: {verdict.producer['description']}")
    if verdict.note:
        print(f"  {'':<{KIND_WIDTH}} note: {verdict.note}")
    if verdict.is_anomaly and verdict.output_tail:
        print(textwrap.indent(verdict.output_tail, "  | "))


def _print_case_summary(case_name: str, case_verdicts: list[Verdict]) -> None:
    kinds = [verdict.kind for verdict in case_verdicts]
    silent = sum(verdict.silent for verdict in case_verdicts)
    counts = ", ".join(
        f"{kinds.count(k)} {k.lower()}"
        + (f" ({silent} raising nothing)" if silent and k == REPRODUCED else "")
        for k in dict.fromkeys(kinds)
    )
    anomalies = [f"{v.variant} {v.kind}" for v in case_verdicts if v.is_anomaly]
    if anomalies:
        status = "NOT AS DOCUMENTED: " + ", ".join(anomalies)
    elif all(kind == SKIPPED for kind in kinds):
        status = "NOT VERIFIED here (every variant skipped)"
    else:
        status = "as documented"
    print(f"  => {case_name}: {counts} -- {status}")


def _print_total(verdicts: list[Verdict], seconds: float) -> ExitCode:
    anomalies = sum(v.is_anomaly for v in verdicts)
    expected = sum(v.kind in EXPECTED_KINDS for v in verdicts)
    skipped = sum(v.kind == SKIPPED for v in verdicts)
    summary = f"{expected} as documented, {anomalies} anomalies, {skipped} skipped"
    if anomalies:
        print(f"\ngallery: FAILED ({summary}) in {seconds:.1f} s")
        return ExitCode.ANOMALIES
    print(f"\ngallery: OK ({summary}) in {seconds:.1f} s")
    return ExitCode.OK


def _case_report(case: Case, platform: Platform, case_verdicts: list[Verdict]) -> CaseReport:
    return CaseReport(
        case=case.name,
        title=case.title,
        finished=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        python=python_platform.python_version(),
        versions=platform.versions,
        cuda_devices=list(platform.cuda_device_names),
        variants=[dataclasses.replace(v, seconds=round(v.seconds, 2)) for v in case_verdicts],
    )
