"""Benchmark: what a gallery run costs next to its floor and its limit.

    python -m shared.harness benchmark [--repeat N]        (or: nox -s benchmark)
    python -m shared.harness benchmark --cases minicpm     (parts 1-3 for these cases only)

Measures, in one run, side by side:
1. the floors: per run, one bare process importing the libraries and every library module and
   class its cases' files import (variants and tiny models; ``floor_code``), as the harness's
   preload imports only those: `nox -s cases` against every case's imports, each
   `nox -s case-<name>` against its own;
2. warm `nox -s cases` (every variant of every case) and each warm `nox -s case-<name>`;
3. the limit of each run: its floor plus the summed seconds of its variants (from the run's own
   reports) divided by the variants run at once (the cores used); target: a case's session
   within 1.2x its limit;
4. cold `nox -s case-minicpm` on a fresh clone (package cache warm, new environment);
5. disk: the case environments together (hardlinks counted once) versus one of them;
6. `python -m shared.culprit run`'s overhead: per case, one forward pass of its model (the first
   outermost module call of its first passing variant) under a Diagnosis against the same pass
   without (``shared.harness.overhead``, a process per case): after the model's first calls
   (the target's measure) and as those first calls are watched, every torch call too; and its
   floor: the same pass under a TorchFunctionMode that only calls through (the least a watch of
   every call costs);
7. the dated sweep: for each stack whose environment `nox -s "matrix(as-of-DATE)"` left (package
   cache warm), a gallery run of that stack's cases against that stack's own limit (its floor
   plus its variants' seconds), and the installs and seconds each stored bisection took.
Prints seconds, ratios and the targets; it asserts nothing (timings belong here, not in tests).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shared.harness import ExitCode, UsageError
from shared.harness.catalog import case_names, load_case
from shared.harness.kinds import SKIPPED
from shared.harness.library_sets import dated_set, sweep_dates
from shared.harness.matrix import stored_bisections
from shared.harness.overhead import BATCHED_S, MAX_BATCH
from shared.harness.paths import REPO_ROOT, RUNS_DIR
from shared.harness.report import CaseReport
from shared.harness.runner import NOT_PRELOADED, library_imports

NOX = [sys.executable, "-m", "nox"]
CASES_PYTHON = REPO_ROOT / ".nox" / "cases" / "bin" / "python"  # `nox -s cases`' environment
RUN_LIMIT_RATIO = 1.2  # a warm run of one case within 1.2x its own limit
ALL_LIMIT_RATIO = 1.1  # warm `nox -s cases` (every case, one run) within 1.1x its limit
COLD_EXTRA_SECONDS = 60.0
DISK_RATIO = 1.2
DIAGNOSE_RATIO = 1.5  # a forward pass under `python -m shared.culprit run` within 1.5x bare


def floor_code(names: list[str] | None = None) -> str:
    """A script importing exactly the external modules and names these cases' files import
    (default: every case's), torch first, as the harness's preload does (a module an older stack
    lacks is passed over, as the preload does)."""
    wanted = [("torch", ())]
    for name in names or case_names():
        wanted += [
            (module, attributes)
            for module, attributes in library_imports(load_case(name).folder)
            if module.split(".")[0] not in ("cases", "shared")
        ]
    lines = ["import importlib"]
    for module, attributes in dict.fromkeys(wanted):
        if module.split(".")[0] in NOT_PRELOADED:
            continue  # the harness does not preload it either
        lines.append(f"try:\n    m = importlib.import_module({module!r})")
        lines += [f"    getattr(m, {a!r}, None)" for a in attributes]
        lines.append("except Exception:\n    pass")
    return "\n".join(lines)


def timed(command: list[str], cwd: Path = REPO_ROOT) -> float:
    started = time.perf_counter()
    run = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:  # a run not as documented (or not run): no figure to give
        print(f"benchmark: {' '.join(command)} failed:\n{run.stdout[-3000:]}{run.stderr[-3000:]}",
              file=sys.stderr)  # fmt: skip
        raise SystemExit(ExitCode.ANOMALIES)
    return time.perf_counter() - started


def median_of(repeat: int, command: list[str], cwd: Path = REPO_ROOT) -> float:
    return statistics.median(timed(command, cwd) for _ in range(repeat))


def disk_kib(*paths: Path) -> int:
    """`du` over the paths together: a file hardlinked into several is counted once."""
    output = subprocess.run(["du", "-skc", *map(str, paths)], capture_output=True, text=True)
    return int(output.stdout.strip().splitlines()[-1].split()[0])


def _at_least_one(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number, at least 1: {text!r}")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repeat", type=_at_least_one, default=3, help="runs per warm figure (median)"
    )
    parser.add_argument(
        "--cases",
        nargs="+",
        metavar="CASE",
        help="measure only these cases' sessions against their floors (parts 1-3)",
    )
    parser.add_argument(
        "--sweep-only",
        action="store_true",
        help="measure only the dated sweep and the bisections (part 7)",
    )
    parser.add_argument(
        "--diagnose-only",
        nargs="*",
        metavar="CASE",
        help="measure only the diagnose overhead (part 6), of these cases (default: every case)",
    )
    parser.add_argument(
        "--dates",
        nargs="+",
        metavar="DATE",
        help="with --sweep-only: only these sweep dates (default: every date)",
    )
    parser.add_argument(
        "--envdir",
        type=Path,
        default=REPO_ROOT / ".nox",
        help="where nox left the dated stacks' environments (nox's --envdir)",
    )
    parser.set_defaults(handler=measure)


def variant_seconds(names: list[str]) -> tuple[float, dict[str, tuple[str, float]]]:
    """Summed variant seconds of the last run's reports, and the largest variant per case."""
    total, largest = 0.0, {}
    for name in names:
        report = CaseReport.read(RUNS_DIR / f"{name}.json")
        ran = [v for v in report.variants if v.kind != SKIPPED]
        if not ran:
            continue  # every variant skipped here (a CUDA-only case on a CPU machine)
        total += sum(v.seconds for v in ran)
        top = max(ran, key=lambda v: v.seconds)
        largest[name] = (top.variant, top.seconds)
    return total, largest


def measure(args: argparse.Namespace) -> ExitCode:
    jobs = os.cpu_count() or 1  # the harness runs this many variants at once by default
    for name in [*(args.cases or ()), *(args.diagnose_only or ())]:
        load_case(name)  # an unknown case or a broken case.toml: exit 2, before anything runs
    if args.dates and not args.sweep_only:
        raise UsageError("--dates measures the dated sweep: give it with --sweep-only")
    if args.sweep_only:
        sweep_figures(args.repeat, jobs, args.envdir, args.dates)
        return ExitCode.OK
    if args.diagnose_only is not None:
        # The cases' environment (torch and the libraries), made or refreshed without a run:
        # this session's own holds nox alone.
        timed([*NOX, "-s", "cases", "--install-only"])
        diagnose_figures(args.diagnose_only or case_names(), CASES_PYTHON)
        return ExitCode.OK
    if args.cases:
        print("warming up: creating/refreshing the nox environments ...", flush=True)
        timed([*NOX, "-s", *[f"case-{name}" for name in args.cases]])
        rows = case_rows(args.cases, args.repeat, jobs)
        print_rows(rows)
        print("(only these cases' sessions: no `nox -s cases`, cold clone, disk, diagnose, sweep)")
        return ExitCode.OK
    names = case_names()
    print("warming up: creating/refreshing the nox environments ...", flush=True)
    timed([*NOX, "-s", "cases", *[f"case-{name}" for name in names]])
    floor = median_of(args.repeat, [str(CASES_PYTHON), "-c", floor_code()])
    warm_all = median_of(args.repeat, [*NOX, "-s", "cases"])
    compute_all, largest = variant_seconds(names)
    rows = case_rows(names, args.repeat, jobs)
    rows.insert(0, ("nox -s cases", floor, warm_all, floor + compute_all / jobs))

    with tempfile.TemporaryDirectory(prefix="gallery-cold-") as scratch:
        clone = Path(scratch) / "clone"
        subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
        cold_minicpm = timed([*NOX, "-s", "case-minicpm"], cwd=clone)
        shutil.rmtree(clone / ".nox", ignore_errors=True)
    warm_minicpm = next(warm for label, _, warm, _ in rows if label == "nox -s case-minicpm")

    case_envs = [REPO_ROOT / ".nox" / f"case-{name}" for name in names]
    one_env, all_envs = disk_kib(case_envs[0]), disk_kib(*case_envs)

    print(f"\nfloor of every case (bare import of what the cases import)  {floor:6.2f} s")
    print(f"variants run at once: {jobs}; summed variant seconds, all cases: {compute_all:.1f} s")
    heaviest = [f"{name}/{variant} {seconds:.1f} s" for name, (variant, seconds) in largest.items()]
    print("largest variant per case: " + ", ".join(heaviest))
    print_rows(rows)
    extra = cold_minicpm - warm_minicpm
    print(f"\ncold nox -s case-minicpm (fresh clone): {cold_minicpm:.2f} s, {extra:.2f} s over "
          f"warm (target <= {COLD_EXTRA_SECONDS:g} s): "
          f"{'met' if extra <= COLD_EXTRA_SECONDS else 'MISSED'}")  # fmt: skip
    disk_ratio = all_envs / one_env
    print(
        f"disk: one case env {one_env / 1024:.0f} MiB, all {len(case_envs)} together "
        f"{all_envs / 1024:.0f} MiB (hardlinks once), ratio {disk_ratio:.2f} "
        f"(target <= {DISK_RATIO:g}): {'met' if disk_ratio <= DISK_RATIO else 'MISSED'}"
    )
    diagnose_figures(names, CASES_PYTHON)
    sweep_figures(args.repeat, jobs, args.envdir)
    return ExitCode.OK


def case_rows(names: list[str], repeat: int, jobs: int) -> list[tuple[str, float, float, float]]:
    """Each case's warm session against its own limit: the floor of what that case imports (in
    its own environment) plus its variants' seconds over the variants run at once. Rows of
    (session, floor, warm, limit)."""
    rows = []
    for name in names:
        python = REPO_ROOT / ".nox" / f"case-{name}" / "bin" / "python"
        floor = median_of(repeat, [str(python), "-c", floor_code([name])])
        warm = median_of(1 if name != "minicpm" else repeat, [*NOX, "-s", f"case-{name}"])
        rows.append((f"nox -s case-{name}", floor, warm, floor + variant_seconds([name])[0] / jobs))
    return rows


def print_rows(rows: list[tuple[str, float, float, float]]) -> None:
    print(f"\n{'run':32} {'floor s':>8} {'warm s':>7} {'limit s':>8} {'ratio':>6}  target")
    for label, floor, warm, limit in rows:
        target = ALL_LIMIT_RATIO if label == "nox -s cases" else RUN_LIMIT_RATIO
        ratio = warm / limit
        verdict = "met" if ratio <= target else "MISSED"
        print(f"{label:32} {floor:8.2f} {warm:7.2f} {limit:8.2f} {ratio:6.2f}  <= {target:g} "
              f"{verdict}")  # fmt: skip


def diagnose_figures(names: list[str], python: Path) -> None:
    """Part 6: per case, a forward pass under a Diagnosis against the same pass bare."""
    print(f"\ndiagnose overhead: one forward pass of each case's model, under "
          f"`python -m shared.culprit run` / bare (target <= {DIAGNOSE_RATIO:g})")  # fmt: skip
    print(f"{'case':28} {'model':26} {'bare ms':>8} {'diag ms':>8} {'ratio':>6} {'hooks':>6} "
          f"{'first':>6} {'floor':>6} {'batch':>5} {'bare ms':>8} {'ratio':>6}")  # fmt: skip
    measured, ratios, hooks, firsts, floors, batched_ratios = [], [], [], [], [], []
    failed = []
    fully_watched = "?"
    for name in names:
        done = subprocess.run([str(python), "-m", "shared.harness.overhead", name], cwd=REPO_ROOT,
                              capture_output=True, text=True)  # fmt: skip
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        found = json.loads(lines[-1]) if lines else {}
        if done.returncode != 0 or not lines:  # not measured: never a row that reads as one
            failed.append(name)
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            print(f"{name:28} NOT MEASURED (exit {done.returncode}): {last[:120]}")
            continue
        if not found.get("model"):
            print(f"{name:28} no model called by a passing variant that needs no GPU")
            continue
        measured.append(name)
        fully_watched = found["fully_watched_calls"]
        ratio = found["diagnosed_s"] / found["bare_s"]
        first = found["every_call_s"] / found["bare_s"]
        floor = found["call_through_s"] / found["bare_s"]
        hooks.append(found["hooks_only_s"] / found["bare_s"])
        ratios.append(ratio)
        firsts.append(first)
        floors.append(floor)
        batched = "  (the model refuses a repeated batch)"
        if found["batched_bare_s"]:
            batched_ratios.append(found["batched_diagnosed_s"] / found["batched_bare_s"])
            batched = (f" {found['batch']:5d} {found['batched_bare_s'] * 1e3:8.2f} "
                       f"{batched_ratios[-1]:6.2f}")  # fmt: skip
        model = found["model"] if found["device"] == "cpu" else (
            f"{found['model'][:20]} {found['device']}")  # synchronised passes (see overhead)
        print(f"{name:28} {model[:26]:26} {found['bare_s'] * 1e3:8.2f} "
              f"{found['diagnosed_s'] * 1e3:8.2f} {ratio:6.2f} {hooks[-1]:6.2f} {first:6.2f} "
              f"{floor:6.2f}"
              f"{batched}")  # fmt: skip
    if ratios:
        median = statistics.median(ratios)
        over = sorted(name for name, ratio in zip(measured, ratios, strict=True)
                      if ratio > DIAGNOSE_RATIO)  # fmt: skip
        # The target holds for every model measured, not for the median alone.
        verdict = "MISSED" if over else "met"
        print(f"ratio: a pass after the model's first {fully_watched} calls: median "
              f"{median:.2f}, worst {max(ratios):.2f} (target <= {DIAGNOSE_RATIO:g} on every "
              f"model: {verdict}; over it: {len(over)} of {len(ratios)}"
              f"{': ' + ', '.join(over) if over else ''})")  # fmt: skip
        print(f"hooks: the pass under a global pre-hook and forward hook that do nothing "
              f"(torch's slow call path and a Python call per hook, before any check): median "
              f"{statistics.median(hooks):.2f}, worst {max(hooks):.2f}")  # fmt: skip
        print(f"first: one of the model's first {fully_watched} calls (every torch call in "
              f"its forward watched too, as `--every-call` watches them all): median "
              f"{statistics.median(firsts):.2f}, worst {max(firsts):.2f}")  # fmt: skip
        print(f"floor: the pass under a TorchFunctionMode that only calls through (every torch "
              f"call handed to Python, nothing checked): median {statistics.median(floors):.2f}")
    if batched_ratios:
        print(f"batched: the same pass, its batch doubled until it lasts {BATCHED_S * 1e3:g} ms "
              f"bare (at most {MAX_BATCH}x; not the target's measure): "
              f"median ratio {statistics.median(batched_ratios):.2f}, worst "
              f"{max(batched_ratios):.2f}, of {len(batched_ratios)} cases")  # fmt: skip
    if failed:
        raise UsageError(f"the overhead of {len(failed)} case(s) could not be measured with "
                         f"{python} ({', '.join(failed)}): its error is on each row; is that "
                         "environment whole (`nox -s cases` makes it)?")  # fmt: skip


def dates_to_measure(dates: list[str] | None) -> list:
    """The sweep dates asked for (all when none is), or exit naming a date that is not one."""
    known = {date.isoformat(): date for date in sweep_dates()}
    unknown = sorted(set(dates or ()) - set(known))
    if unknown:
        raise UsageError(f"not a sweep date: {', '.join(unknown)} "
                         "(the dates: [tool.gallery.sweep] in pyproject.toml)")  # fmt: skip
    return [date for text, date in known.items() if not dates or text in dates]


def sweep_figures(repeat: int, jobs: int, envdir: Path, dates: list[str] | None = None) -> None:
    """Each dated stack's warm gallery run against its own limit; the bisections' installs."""
    measured = dates_to_measure(dates)
    print(f"\ndated sweep (stacks whose environment exists; target <= {RUN_LIMIT_RATIO:g}):")
    print(f"{'stack':22} {'cases':>5} {'floor s':>8} {'run s':>7} {'limit s':>8} {'ratio':>6}")
    for date in measured:
        stack = dated_set(date)
        python = envdir / f"matrix-{stack.name}" / "bin" / "python"
        if not python.exists():
            print(f'{stack.name:22} not built: nox -s "matrix({stack.name})" first')
            continue
        cases = list(stack.cases)
        floor = median_of(repeat, [str(python), "-c", floor_code(cases)])
        with tempfile.TemporaryDirectory(prefix="gallery-sweep-") as reports:
            command = [str(python), "-m", "shared.harness", "run", *cases, "--report-dir", reports]
            started = time.perf_counter()
            subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
            wall = time.perf_counter() - started  # anomalies too: the cost is what is measured
            compute = sum(
                v.seconds
                for path in Path(reports).glob("*.json")
                for v in CaseReport.read(path).variants
                if v.kind != SKIPPED
            )
        limit = floor + compute / jobs
        ratio = wall / limit
        print(f"{stack.name:22} {len(cases):5} {floor:8.2f} {wall:7.2f} {limit:8.2f} "
              f"{ratio:6.2f}  {'met' if ratio <= RUN_LIMIT_RATIO else 'MISSED'}")  # fmt: skip
    bisections = stored_bisections()
    print(f"\nbisections stored: {len(bisections)}")
    for found in bisections:
        print(f"  {found.case}/{found.variant} along {found.package} over {found.base}: "
              f"{found.installs} installs, {len(found.probes)} probes of {len(found.releases)} "
              f"releases, {found.seconds:.0f} s")  # fmt: skip
