"""The run's named steps, each a function over the previous step's result (as nox's
``execute_workflow``): plan -> run_planned -> judge_each -> report. ``run`` chains them for
``python -m shared.harness run``; a run by hand (``by_hand``) has no run step (its record comes
from the script's own process) and takes the plan and judge steps from here.

The facts a line shows beyond the verdict (where a failure absent here is shown by a stored run:
``stored_runs``) are looked up here and handed to ``lines``, which only formats.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import importlib
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
from shared.harness import ExitCode, UsageError
from shared.harness.case import FAILURES, Case, Variant
from shared.harness.environment import ImportFailure, import_failures
from shared.harness.kinds import ANOMALIES, REPRODUCED, SKIPPED, UNAFFECTED
from shared.harness.libraries import CASE_LIBRARIES
from shared.harness.library_sets import PINNED, named_sets, set_date
from shared.harness.lines import (
    StoredRuns,
    case_summary,
    failure_line,
    run_summary,
    verdict_row,
)
from shared.harness.matrix import Row, all_rows, flip_text, flips, stored_bisections
from shared.harness.paths import WORK_DIR
from shared.harness.report import CaseReport, Outcome, Verdict
from shared.harness.runner import (
    NOT_PRELOADED,
    Job,
    library_imports,
    preload,
    run_jobs,
    start_cuda_probe,
    start_method,
)
from shared.harness.verdicts import (
    Platform,
    installed_version,
    judge,
    skip_reason,
)


def run(cases: list[Case], parallel: int, report_dir: Path, require_cuda: bool = False) -> ExitCode:
    """The run: the libraries the cases import checked (and, forking, imported once), the
    header, then the steps. The steps after the plan are lazy: each verdict is printed as soon as
    its variant (and those before it) finished."""
    started = time.perf_counter()
    # The GPU is asked in a child started before the parent imports anything that could
    # initialise CUDA; torch (whose import initialises nothing) is imported meanwhile where the
    # variants may be forked (a failure is preload's to report).
    cuda_probe = start_cuda_probe()
    if start_method() == "fork":
        with contextlib.suppress(Exception):
            importlib.import_module("torch")
    cuda_names = tuple(cuda_probe())
    method = start_method(cuda_visible=bool(cuda_names))
    failures = _unimportable(cases, method)
    if failures:  # each on a line of its own, as UsageError's lines are shown
        raise UsageError(*(
            failure.describe(remedy=f"install the package that provides {failure.missing_module!r} "
                             "in this environment")
            for failure in failures
        ))  # fmt: skip
    platform = Platform.installed(cuda_names)
    if require_cuda and not platform.cuda_devices:
        raise UsageError("--require-cuda, but no CUDA GPU is visible here")
    _print_header(platform, method, time.perf_counter() - started, parallel)
    # A folder of this run's own: two runs at once (a matrix set, a test) never share one.
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=WORK_DIR))
    try:
        planned = plan(cases, platform)
        judged = judge_each(planned, run_planned(planned, run_dir, parallel, method), platform)
        return report(cases, judged, platform, report_dir, started)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _unimportable(cases: list[Case], method: str) -> list[ImportFailure]:
    """The installed libraries the cases import that cannot be imported: an environment error,
    never a verdict. Forking, the parent's preload imports them anyway; those it must not import
    (NOT_PRELOADED), or every one when spawning, are tried meanwhile in a child."""
    imported = {"torch"} | {module.split(".")[0] for case in cases
                            for module, _ in library_imports(case.folder)}  # fmt: skip
    needed = {package: module for package, module in CASE_LIBRARIES.items() if module in imported}
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
    """One variant as the plan has it: the processes it runs in, or why it cannot run here."""

    case: Case
    variant: Variant
    ranks: int = 1  # torchrun variants: processes to launch (see shared.distributed)
    not_run: str = ""  # the unmet requirement that skips it here; "" when it runs

    @property
    def key(self) -> tuple[str, str]:
        return self.case.name, self.variant.name


def plan(cases: list[Case], platform: Platform) -> list[Planned]:
    """Every variant of every case, in order: its ranks, or the unmet requirement that skips it
    here."""
    planned = []
    for case in cases:
        for variant in case.variants:
            ranks, device = 1, platform.default_device
            if variant.launcher == "torchrun":
                ranks = torchrun_ranks(variant.ranks, platform.cuda_devices)
                device = rank_backend(ranks, platform.cuda_devices)[1]
            reason = skip_reason(variant.requires, platform, device) or ""
            planned.append(Planned(case, variant, ranks, reason))
    return planned


def run_planned(
    planned: list[Planned], run_dir: Path, parallel: int, method: str
) -> Iterator[Outcome]:
    """Each planned variant's outcome, in plan order: a skipped one at once, the others as
    their processes end (``parallel`` at a time, started by ``method``, each in its folder under
    ``run_dir``)."""
    threads = max(1, (os.cpu_count() or 1) // parallel)
    jobs = [Job(p.case, p.variant, run_dir / p.case.name / p.variant.name, threads, p.ranks)
            for p in planned if not p.not_run]  # fmt: skip
    outcomes = run_jobs(jobs, parallel, method)
    for each in planned:
        yield Outcome(not_run=each.not_run) if each.not_run else next(outcomes)[1]


def judge_each(
    planned: list[Planned], outcomes: Iterator[Outcome], platform: Platform
) -> Iterator[Verdict]:
    """Each variant's verdict, in plan order, as soon as its outcome and (a fixed variant) its
    broken twin's are in: a fix is judged against the setting its twin ran."""
    planned_keys = {each.key for each in planned}
    seen: dict[tuple[str, str], Outcome] = {}
    waiting: list[Planned] = []
    for each, outcome in zip(planned, outcomes, strict=True):
        seen[each.key] = outcome
        waiting.append(each)
        while waiting:
            twin = (waiting[0].case.name, waiting[0].variant.fixes)
            if twin in planned_keys and twin not in seen:
                break  # the twin runs later in the plan
            first = waiting.pop(0)
            yield judge(first.variant, seen[first.key], platform, seen.get(twin))


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
            verdict = next(verdicts)
            case_verdicts.append(verdict)
            print(verdict_row(verdict))
            if verdict.kind in (UNAFFECTED, SKIPPED):  # shows no failure here: where it does
                shown_elsewhere = failure_line(case, variant, verdict, stored_runs(case, variant))
                if shown_elsewhere:
                    print(shown_elsewhere)
        print(case_summary(case.name, case_verdicts))
        _case_report(case, platform, case_verdicts).write(report_dir)
        every += case_verdicts
    print(run_summary(every, time.perf_counter() - started))
    return ExitCode.ANOMALIES if any(v.kind in ANOMALIES for v in every) else ExitCode.OK


def stored_runs(case: Case, variant: Variant, rows: tuple[Row, ...] | None = None) -> StoredRuns:
    """What the regression matrix's stored runs say of a variant (``rows``: the matrix's rows,
    default every stored one): its measured flip, and for a failing variant the stored set
    that shows its failure on the CPU, where its case.toml documents it failing (a `when` entry
    holds for the set's versions). Of those sets: one ``[tool.gallery.matrix]`` declares, else
    the newest dated one."""
    rows = _stored_rows() if rows is None else rows
    own = [row for row in rows if (row.case, row.variant) == (case.name, variant.name)]
    found = flips(own, stored_bisections())
    flip = flip_text(found[0]) if found else ""
    declared = set(named_sets()) - {PINNED, "latest"}  # the stacks that stay as stored
    shown = [
        row for row in own
        if row.verdict == REPRODUCED and row.device == "cpu" and row.set in declared
        and variant.expectation_for(row.versions, "cpu").expect in FAILURES
    ]  # fmt: skip
    if not shown:
        return StoredRuns(flip=flip)
    best = min(
        shown,
        key=lambda row: (
            set_date(row.set) is not None,
            -(set_date(row.set) or datetime.date.min).toordinal(),
        ),
    )
    named = dict.fromkeys(["torch", *sorted({n for c in variant.conditions for n in c.packages})])
    versions = ", ".join(f"{name} {best.versions[name]}" for name in named
                         if best.versions.get(name))  # fmt: skip
    return StoredRuns(flip=flip, reproduced_on=best.set, versions=versions)


@functools.cache
def _stored_rows() -> tuple[Row, ...]:
    return tuple(all_rows())


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
        else "each in a new interpreter"
        + (" (CUDA is visible: a forked child could not use it)" if platform.cuda_devices else "")
    )
    print(f"variants: fresh process each, {how}, up to {parallel} at a time")


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
