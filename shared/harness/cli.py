"""The harness's command line: ``python -m shared.harness COMMAND`` (run, list, explain, matrix,
bisect, site, readme, benchmark).

``run`` prints the library versions and devices first, then one line per variant (verdict,
device, seconds, the error seen or the measured figure) and a summary, and writes a JSON report
per case. Every command exits with one of :class:`shared.harness.ExitCode`: 1 when any verdict is
an anomaly, 2 on bad input (unknown case, broken metadata, missing packages).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform as python_platform
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from shared.distributed import rank_backend, torchrun_ranks
from shared.harness import INSTALL_HINT, ExitCode
from shared.harness.case import Case, CaseError, Variant
from shared.harness.catalog import case_names, load_case
from shared.harness.environment import ImportFailure, import_failures
from shared.harness.kinds import ANOMALIES, EXPECTED_KINDS, SKIPPED
from shared.harness.libraries import CASE_LIBRARIES as LIBRARIES
from shared.harness.lines import case_summary, failure_line, verdict_row
from shared.harness.paths import CASES_DIR, RUNS_DIR, WORK_DIR
from shared.harness.report import CaseReport, Outcome, Verdict
from shared.harness.runner import (
    NOT_PRELOADED,
    Job,
    library_imports,
    preload,
    probe_cuda,
    run_jobs,
    start_method,
)
from shared.harness.verdicts import (
    Platform,
    installed_version,
    judge,
    skip_reason,
)
from shared.tiny_models import PERTURB_VARIABLE, perturbation

# Every case needs torch; other libraries are each case's `requires` (a case whose library is
# missing, as in an upstream-era set, is SKIPPED with the reason).
REQUIRED_PACKAGES = ("torch",)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    return int(ExitCode(args.handler(args)))  # every command exits with one of ExitCode's


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
    missing = [name for name in REQUIRED_PACKAGES if not installed_version(name)]
    if missing:
        print(
            f"gallery: error: {', '.join(missing)} not installed for {sys.executable}; "
            f"{INSTALL_HINT}",
            file=sys.stderr,
        )
        return ExitCode.USAGE_ERROR
    if args.only:
        cases = [_only_variants(case, args.only) for case in cases]
        ran = {name for case in cases for v in case.variants for name in (v.name, _key(case, v))}
        unknown = set(args.only) - ran
        if unknown:
            print(f"gallery: error: no variant named {sorted(unknown)}", file=sys.stderr)
            return ExitCode.USAGE_ERROR
        cases = [case for case in cases if case.variants]
    absent = sorted({f"{name} ({case.name}/{variant.name})" for case in cases
                     for variant in case.variants for name in variant.requires.packages
                     if args.complete_env and not installed_version(name)})  # fmt: skip
    if absent:
        print(f"gallery: error: --complete-env, but not installed for {sys.executable}: "
              f"{', '.join(absent)}; {INSTALL_HINT}", file=sys.stderr)  # fmt: skip
        return ExitCode.USAGE_ERROR
    if args.perturb:  # read by shared.tiny_models in every variant process (forked or spawned)
        os.environ[PERTURB_VARIABLE] = args.perturb
    return run(cases, args.jobs, args.report_dir, require_cuda=args.require_cuda)


def _key(case: Case, variant) -> str:
    return f"{case.name}/{variant.name}"


def _only_variants(case: Case, names: list[str]) -> Case:
    """The variants named plainly (in every case) or as CASE/VARIANT."""
    chosen = tuple(v for v in case.variants if v.name in names or _key(case, v) in names)
    return dataclasses.replace(case, variants=chosen)


def run(cases: list[Case], parallel: int, report_dir: Path, require_cuda: bool = False) -> ExitCode:
    """The run as named steps, each a function over the previous step's result (as nox's
    ``execute_workflow``): plan -> run_planned -> judge_each -> report. The steps after the plan
    are lazy: each verdict is printed as soon as its variant (and those before it) finished."""
    started = time.perf_counter()
    method = start_method()
    failures = _unimportable(cases, method)
    if failures:
        for failure in failures:
            remedy = (f"install the package that provides {failure.missing_module!r} in this "
                      "environment")  # fmt: skip
            print(f"gallery: error: {failure.describe(remedy=remedy)}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    platform = Platform.installed(tuple(probe_cuda()))
    if require_cuda and not platform.cuda_devices:
        print("gallery: error: --require-cuda, but no CUDA GPU is visible here", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    _print_header(platform, method, time.perf_counter() - started, parallel)
    # A folder of this run's own: two runs at once (a matrix set, a test) never share one.
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=WORK_DIR))
    try:
        planned = plan(cases, platform, run_dir, parallel)
        judged = judge_each(planned, run_planned(planned, parallel), platform)
        return report(cases, judged, platform, report_dir, started)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _unimportable(cases: list[Case], method: str) -> list[ImportFailure]:
    """The installed libraries the cases import that cannot be imported: an environment error,
    never a verdict. Forking, the parent's preload imports them anyway; those it must not import
    (NOT_PRELOADED), or every one when spawning, are tried meanwhile in a child."""
    imported = {"torch"} | {module.split(".")[0] for case in cases
                            for module, _ in library_imports(case.folder)}  # fmt: skip
    needed = {package: module for package, module in LIBRARIES.items() if module in imported}
    elsewhere = {package: module for package, module in needed.items()
                 if method == "spawn" or module in NOT_PRELOADED}  # fmt: skip
    with ThreadPoolExecutor(max_workers=1) as pool:
        in_child = pool.submit(import_failures, sys.executable, elsewhere)
        failed_here = preload(case.folder for case in cases) if method == "fork" else {}
        failures = [
            ImportFailure.of(package, version, failed_here[module])
            for package, module in needed.items()
            if module in failed_here and (version := installed_version(package))
        ]
        return failures + in_child.result()


@dataclass(frozen=True)
class Planned:
    """One variant as the plan has it: the job that runs it, or why it cannot run here."""

    case: str
    variant: Variant
    job: Job | None
    not_run: str = ""


def plan(cases: list[Case], platform: Platform, run_dir: Path, parallel: int) -> list[Planned]:
    """Every variant of every case, in order: a job (its folder, threads, ranks), or the unmet
    requirement that skips it here."""
    threads = max(1, (os.cpu_count() or 1) // parallel)
    planned = []
    for case in cases:
        for variant in case.variants:
            ranks, device = 1, platform.default_device
            if variant.launcher == "torchrun":
                ranks = torchrun_ranks(variant.ranks, platform.cuda_devices)
                device = rank_backend(ranks, platform.cuda_devices)[1]
            reason = skip_reason(variant.requires, platform, device)
            if reason:
                planned.append(Planned(case.name, variant, None, reason))
            else:
                work_dir = run_dir / case.name / variant.name
                job = Job(case, variant, work_dir, threads, ranks)
                planned.append(Planned(case.name, variant, job))
    return planned


def run_planned(planned: list[Planned], parallel: int) -> Iterator[Outcome]:
    """Each planned variant's outcome, in plan order: a skipped one at once, the others as
    their processes end (``parallel`` at a time)."""
    outcomes = run_jobs([p.job for p in planned if p.job], parallel)
    for each in planned:
        yield next(outcomes)[1] if each.job else Outcome(not_run=each.not_run)


def judge_each(
    planned: list[Planned], outcomes: Iterator[Outcome], platform: Platform
) -> Iterator[Verdict]:
    """Each variant's verdict, in plan order, as soon as its outcome and (a fixed variant) its
    broken twin's are in: a fix is judged against the setting its twin ran."""
    planned_keys = {(each.case, each.variant.name) for each in planned}
    seen: dict[tuple[str, str], Outcome] = {}
    waiting: list[Planned] = []
    for each, outcome in zip(planned, outcomes, strict=True):
        seen[each.case, each.variant.name] = outcome
        waiting.append(each)
        while waiting:
            twin = (waiting[0].case, waiting[0].variant.fixes)
            if twin in planned_keys and twin not in seen:
                break  # the twin runs later in the plan
            first = waiting.pop(0)
            key = (first.case, first.variant.name)
            yield judge(first.variant, seen[key], platform, seen.get(twin))


def report(
    cases: list[Case],
    verdicts: Iterator[Verdict],
    platform: Platform,
    report_dir: Path,
    started: float,
) -> ExitCode:
    """Print each verdict as it comes and a summary per case, write each case's JSON report;
    the exit code says whether every verdict is the documented one."""
    every = []
    for case in cases:
        print(f"\n{case.name}: {case.title}\n  upstream: {case.issue}")
        case_verdicts = []
        for variant in case.variants:
            case_verdicts.append(next(verdicts))
            print(verdict_row(case_verdicts[-1]))
            shown_elsewhere = failure_line(case, variant, case_verdicts[-1])
            if shown_elsewhere:
                print(shown_elsewhere)
        print(case_summary(case.name, case_verdicts))
        _case_report(case, platform, case_verdicts).write(report_dir)
        every += case_verdicts
    return _print_total(every, time.perf_counter() - started)


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


def _print_total(verdicts: list[Verdict], seconds: float) -> ExitCode:
    anomalies = sum(v.kind in ANOMALIES for v in verdicts)
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
