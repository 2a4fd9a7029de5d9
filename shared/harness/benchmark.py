"""Benchmark: what a gallery run costs next to the floor of one bare import of its libraries.

    python -m shared.harness benchmark [--repeat N]        (or: nox -s benchmark)

Measures, in one run, side by side:
1. the floor: one bare process importing the libraries (and classes) the variants import;
2. warm `nox -s case-minicpm` and warm `nox -s cases` (every variant of every case);
3. cold `nox -s case-minicpm` on a fresh clone (package cache warm, new environment);
4. disk: the case environments together (hardlinks counted once) versus one of them.
Prints seconds, ratios and the targets; it asserts nothing (timings belong here, not in tests).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shared.harness.catalog import case_names, load_case
from shared.harness.paths import REPO_ROOT
from shared.harness.runner import PRELOAD, imports_of

NOX = [sys.executable, "-m", "nox"]
TARGETS = {  # (figure, limit, how it is compared)
    "warm all cases / floor": 3.0,
    "warm case-minicpm / floor": 1.5,
    "cold - warm case-minicpm (s)": 60.0,
    "all case envs / one env (disk)": 1.2,
}


def floor_code() -> str:
    """A script importing exactly the external modules and names the variants import."""
    lines = [f"import {name}" for name in PRELOAD]
    for name in case_names():
        for variant in load_case(name).variants:
            for module, attributes in imports_of(variant.script):
                if module.split(".")[0] in ("cases", "shared"):
                    continue
                lines.append(f"import {module}")
                lines += [f"getattr({module}, {a!r}, None)" for a in attributes]
    return "\n".join(dict.fromkeys(lines))


def timed(command: list[str], cwd: Path = REPO_ROOT) -> float:
    started = time.perf_counter()
    run = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(
            f"benchmark: {' '.join(command)} failed:\n{run.stdout[-3000:]}{run.stderr[-3000:]}"
        )
    return time.perf_counter() - started


def median_of(repeat: int, command: list[str], cwd: Path = REPO_ROOT) -> float:
    return statistics.median(timed(command, cwd) for _ in range(repeat))


def disk_kib(*paths: Path) -> int:
    """`du` over the paths together: a file hardlinked into several is counted once."""
    output = subprocess.run(["du", "-skc", *map(str, paths)], capture_output=True, text=True)
    return int(output.stdout.strip().splitlines()[-1].split()[0])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeat", type=int, default=3, help="runs per warm figure (median)")
    parser.set_defaults(handler=measure)


def measure(args: argparse.Namespace) -> int:

    print("warming up: creating/refreshing the nox environments ...", flush=True)
    timed([*NOX, "-s", "case-minicpm", "cases"])
    env_python = REPO_ROOT / ".nox" / "cases" / "bin" / "python"
    floor = median_of(args.repeat, [str(env_python), "-c", floor_code()])
    warm_minicpm = median_of(args.repeat, [*NOX, "-s", "case-minicpm"])
    warm_all = median_of(args.repeat, [*NOX, "-s", "cases"])

    with tempfile.TemporaryDirectory(prefix="gallery-cold-") as scratch:
        clone = Path(scratch) / "clone"
        subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
        cold_minicpm = timed([*NOX, "-s", "case-minicpm"], cwd=clone)
        shutil.rmtree(clone / ".nox", ignore_errors=True)

    case_envs = [REPO_ROOT / ".nox" / f"case-{name}" for name in case_names()]
    for env in case_envs:  # every case environment must exist to be measured
        if not env.exists():
            timed([*NOX, "-s", env.name])
    one_env = disk_kib(case_envs[0])
    all_envs = disk_kib(*case_envs)

    figures = {
        "warm all cases / floor": warm_all / floor,
        "warm case-minicpm / floor": warm_minicpm / floor,
        "cold - warm case-minicpm (s)": cold_minicpm - warm_minicpm,
        "all case envs / one env (disk)": all_envs / one_env,
    }
    print(f"\nfloor (bare import of the libraries)   {floor:7.2f} s")
    print(f"warm nox -s case-minicpm                {warm_minicpm:7.2f} s")
    print(f"warm nox -s cases (all variants)        {warm_all:7.2f} s")
    print(f"cold nox -s case-minicpm (fresh clone)  {cold_minicpm:7.2f} s")
    print(f"disk: one case env {one_env / 1024:.0f} MiB, all {len(case_envs)} together "
          f"{all_envs / 1024:.0f} MiB (hardlinks once)\n")  # fmt: skip
    print(f"{'figure':34} {'measured':>9} {'target':>8}  verdict")
    for name, value in figures.items():
        limit = TARGETS[name]
        print(f"{name:34} {value:9.2f} {'<= ' + format(limit, 'g'):>8}  "
              f"{'met' if value <= limit else 'MISSED'}")  # fmt: skip
    return 0
