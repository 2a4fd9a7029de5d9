"""Release bisection: the first release of one library where one variant's verdict changes.

    python -m shared.harness bisect CASE/VARIANT PACKAGE [GOOD BAD] [--base SET | --as-of DATE]
                                    [--pre] [--message]
    (or: nox -s bisect -- CASE/VARIANT PACKAGE [GOOD BAD] ...)

Runs in an environment it reinstalls (nox's ``bisect`` session makes one): lists the package's
releases from GOOD to BAD from the index the installer is configured with (``UV_DEFAULT_INDEX``,
``UV_INDEX_URL`` or ``PIP_INDEX_URL``, else PyPI; its JSON simple API), holds the rest of the
stack fixed (the pinned set, a named matrix set, or the stack of a date), makes the environment
hold exactly that stack with one release at a time (``shared.harness.environment``: resolved
and synced, nothing left from the last probe), runs the variant and binary-searches the
verdict's change. Without GOOD and BAD it takes the first cut of the
stored flips that no bisection located yet. A release whose verdict differs from GOOD's is run
twice before it counts: a verdict that differs between identical runs is recorded as flaky and
nothing is concluded (as transformers' utils/check_bad_commit.py re-runs before bisecting).
With ``--message`` the error's first line is part of the verdict, so a release that only
rewords the error (a ``when`` entry with another ``message``) is located the same way.
The result is stored in ``reports/matrix/bisections/`` and shown with the flips.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from shared.harness import ExitCode, store
from shared.harness.catalog import CaseError, load_case
from shared.harness.environment import install_commands, installed_packages, platform_description
from shared.harness.library_sets import (
    PINNED,
    LibrarySet,
    LibrarySetError,
    dated_set,
    library_set,
)
from shared.harness.matrix import all_rows, flips, stored_bisections
from shared.harness.paths import MATRIX_DIR, REPO_ROOT, relative
from shared.harness.report import Bisection, CaseReport, Probe
from shared.harness.store import BISECTIONS

UV_VARIABLE = "GALLERY_UV"  # the uv binary (nox's bisect session sets it)
UNINSTALLABLE = "UNINSTALLABLE"


class BisectError(Exception):
    """The bisection cannot start or go on; the message says why and what to give."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="CASE/VARIANT")
    parser.add_argument("package", help="the library whose releases are bisected")
    parser.add_argument(
        "bounds", nargs="*", metavar="GOOD BAD", help="two releases with different verdicts"
    )
    base = parser.add_mutually_exclusive_group()
    base.add_argument("--base", default=PINNED, help="library set held fixed (default: pinned)")
    base.add_argument("--as-of", help="hold fixed the stack of this date (YYYY-MM-DD)")
    parser.add_argument("--pre", action="store_true", help="include pre-releases (rc, beta)")
    parser.add_argument(
        "--message",
        action="store_true",
        help="a changed error message counts as a change (a `when` entry that rewords it)",
    )
    default_dir = Path(os.environ.get("GALLERY_MATRIX_DIR", MATRIX_DIR))
    parser.add_argument("--matrix-dir", type=Path, default=default_dir)
    parser.add_argument(
        "--python", default=sys.executable,
        help="the interpreter of the environment to reinstall (default: this one)",
    )  # fmt: skip
    parser.set_defaults(handler=bisect_command)


def bisect_command(args: argparse.Namespace) -> int:
    try:
        bisection, environment = run_bisection(args, args.python)
    except (BisectError, CaseError, LibrarySetError) as exc:
        print(f"bisect: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    path = store.store_bisection(args.matrix_dir / BISECTIONS, bisection, environment)
    print(f"\n{summary(bisection)}\nrecorded in {relative(path)}")
    return ExitCode.ANOMALIES if bisection.flaky else ExitCode.OK


def summary(bisection: Bisection) -> str:
    where = f"{bisection.case}/{bisection.variant}"
    if bisection.flaky:
        return f"bisect: FLAKY {where}: a changed verdict did not repeat; nothing concluded"
    releases = bisection.releases
    gap = releases[
        releases.index(bisection.last_before) + 1 : releases.index(bisection.first_changed)
    ]
    between = f"not installable between them: {', '.join(gap)}" if gap else "adjacent releases"
    return (
        f"bisect: {where}: {bisection.verdict_before} on {bisection.package} "
        f"{bisection.last_before}, {bisection.verdict_after} from {bisection.first_changed} "
        f"({between}; {len(bisection.probes)} probes, {bisection.installs} installs, "
        f"{bisection.seconds:.0f} s; over {bisection.base})"
    )


def run_bisection(args: argparse.Namespace, python: str = sys.executable) -> tuple[Bisection, dict]:
    """The bisection, and the environment it held fixed (as the store records it); ``python``:
    the interpreter of the environment it reinstalls."""
    case_name, _, variant = args.target.partition("/")
    case = load_case(case_name)
    if variant not in {v.name for v in case.variants}:
        raise BisectError(f"{case_name} has no variant {variant!r}")
    base = dated_set(args.as_of) if args.as_of else library_set(args.base)
    good, bad = _bounds(args, case_name, variant)
    releases = _releases(args.package, good, bad, args.pre)
    started = time.perf_counter()
    bisector = _Bisector(case_name, variant, args.package, base, args.message, python)
    before = bisector.probe(releases[0])
    after = bisector.probe(releases[-1])
    # Over today's pinned set an old release may not install, or may fail against the newer
    # libraries beside it in a way that has nothing to do with the boundary: a stack of its own
    # time held fixed is the base for it.
    dated_base = (
        ""
        if args.as_of or args.base != PINNED
        else f"; for an old {args.package}, hold a stack of its time fixed instead of the "
        f"pinned set: --base as-of-DATE (a sweep date when {good} was current)"
    )
    if UNINSTALLABLE in (before.verdict, after.verdict):
        raise BisectError(
            f"{args.package} {good} or {bad} does not install over {base.name}{dated_base}"
        )
    if before.verdict == after.verdict:
        seen = f" ({before.message})" if before.message else ""
        raise BisectError(
            f"{before.verdict} on both {good} and {bad}{seen}: nothing to bisect{dated_base}"
        )
    flaky = bool(after.rerun and after.rerun != after.verdict)
    low, high = 0, len(releases) - 1  # verdict(low) == before's, verdict(high) != before's
    untried = set(range(1, len(releases) - 1))
    while not flaky:
        between = sorted(i for i in untried if low < i < high)
        if not between:
            break
        middle = between[len(between) // 2]
        untried.discard(middle)
        probe = bisector.probe(releases[middle])
        if probe.verdict == UNINSTALLABLE:
            continue  # cannot stand between the others over this base: try its neighbours
        flaky = bool(probe.rerun and probe.rerun != probe.verdict)
        if probe.verdict == before.verdict:
            low = middle
        else:
            high = middle
    first = next(p for p in bisector.probes if p.version == releases[high])
    bisection = Bisection(
        case=case_name,
        variant=variant,
        package=args.package,
        base=base.name,
        versions=bisector.versions,
        releases=releases,
        probes=bisector.probes,
        verdict_before=before.verdict,
        verdict_after=first.verdict,
        last_before=releases[low],
        first_changed=releases[high],
        flaky=flaky,
        installs=bisector.installs,
        seconds=round(time.perf_counter() - started, 1),
        finished=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )
    described = platform_description(python)
    environment = store.new_environment(
        asked={**base.asked, "bisected": f"{args.package} {releases[0]} .. {releases[-1]}"},
        installed=installed_packages(python),  # as the last probe left it
        python=described["python"],
        machine=described["machine"],
        cuda_devices=bisector.cuda_devices,
        recorded=bisection.finished,
    )
    return bisection, environment


def _bounds(args: argparse.Namespace, case: str, variant: str) -> tuple[str, str]:
    if len(args.bounds) == 2:
        return args.bounds[0], args.bounds[1]
    if args.bounds:
        raise BisectError("give both GOOD and BAD, or neither (then the stored flips say)")
    rows = all_rows(args.matrix_dir)
    for flip in flips(rows, stored_bisections(args.matrix_dir)):
        if (flip["case"], flip["variant"], flip["package"]) != (case, variant, args.package):
            continue
        for before, after in zip(flip["segments"], flip["segments"][1:], strict=False):
            if "bisected" not in after:
                return before["last"], after["first"]
    raise BisectError(
        f"the stored matrix shows no unbisected change of {case}/{variant} along "
        f"{args.package}: give GOOD and BAD"
    )


def index_url() -> str:
    """The index the installer is configured with (uv's variables first, then pip's)."""
    for variable in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        if os.environ.get(variable):
            return os.environ[variable].rstrip("/")
    return "https://pypi.org/simple"


def _releases(package: str, good: str, bad: str, pre: bool) -> list[str]:
    """Every release from ``good`` to ``bad`` (either order), oldest first, as the index has it
    (its JSON simple API, PEP 691/700: the versions that have a file not yanked)."""
    url = f"{index_url()}/{canonicalize_name(package)}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            page = json.load(response)
    except (OSError, ValueError) as exc:  # URLError is an OSError; bad JSON a ValueError
        raise BisectError(f"could not list the releases of {package} from {url}: {exc}") from None
    try:
        low, high = sorted((Version(good), Version(bad)))
        versions = sorted({Version(v) for v in page.get("versions", ()) if _has_file(page, v)})
    except InvalidVersion as exc:
        raise BisectError(str(exc)) from None
    between = [str(v) for v in versions if low <= v <= high and (pre or not v.is_prerelease
                                                                  or v in (low, high))]  # fmt: skip
    missing = {str(low), str(high)} - set(between)
    if missing:
        raise BisectError(f"{package} {sorted(missing)} not among the index's releases")
    return between if Version(good) <= Version(bad) else between[::-1]


def _has_file(page: dict, version: str) -> bool:
    """A release with at least one file not yanked (a file's version read from its name)."""
    from packaging.utils import parse_sdist_filename, parse_wheel_filename

    for entry in page.get("files", ()):
        name = entry["filename"]
        try:
            parsed = (parse_wheel_filename(name)[1] if name.endswith(".whl")
                      else parse_sdist_filename(name)[1])  # fmt: skip
        except ValueError:
            continue
        if parsed == Version(version) and not entry.get("yanked"):
            return True
    return False


class _Bisector:
    """Makes ``python``'s environment hold ``base`` with one release of ``package`` at a time
    and runs the variant there."""

    def __init__(
        self, case: str, variant: str, package: str, base: LibrarySet, by_message: bool = False,
        python: str = sys.executable,
    ) -> None:  # fmt: skip
        self.case, self.variant, self.package, self.base = case, variant, package, base
        self.by_message = by_message  # the outcome is the verdict and the error's first line
        self.python = python
        self.uv = os.environ.get(UV_VARIABLE) or shutil.which("uv")
        if not self.uv:
            raise BisectError(f"needs uv: set {UV_VARIABLE} or put uv on PATH (nox -s bisect does)")
        self.probes: list[Probe] = []
        self.installs = 0
        self.versions: dict[str, str | None] = {}
        self.cuda_devices: list[str] = []

    def probe(self, version: str) -> Probe:
        print(f"bisect: {self.package}=={version} over {self.base.name} ...", flush=True)
        if not self._install(version):
            probe = Probe(version, UNINSTALLABLE, f"{self.package}=={version} did not resolve")
        else:
            report = self._run()
            verdict = report.verdict(self.variant)
            probe = Probe(version, outcome(verdict, self.by_message), _first_line(verdict))
            first = self.probes[0].verdict if self.probes else probe.verdict
            if probe.verdict != first:  # a change is believed only when it repeats
                probe.rerun = outcome(self._run().verdict(self.variant), self.by_message)
            self.versions = {k: v for k, v in report.versions.items() if k != self.package}
            self.cuda_devices = list(report.cuda_devices)
        again = f" (run again: {probe.rerun})" if probe.rerun else ""
        shown = (
            probe.verdict if probe.message in probe.verdict else f"{probe.verdict} {probe.message}"
        )
        print(f"bisect:   {shown}{again}", flush=True)
        self.probes.append(probe)
        return probe

    def probe_set(self, version: str) -> LibrarySet:
        """The base with ``package==version`` in place of its own requirement of it."""
        kept = tuple(r for r in self.base.requirements
                     if Requirement(r).name.lower() != self.package.lower())  # fmt: skip
        return dataclasses.replace(self.base, requirements=(*kept, f"{self.package}=={version}"))

    def _install(self, version: str) -> bool:
        """Resolve the base with ``package==version`` to exact pins, then sync to them."""
        with tempfile.TemporaryDirectory(prefix="gallery-bisect-") as scratch:
            resolve, sync = install_commands(
                self.probe_set(version), self.python, self.uv, Path(scratch)
            )
            if self.base.as_of:  # the bisected package may be newer than the stack's date
                today = datetime.date.today().isoformat()
                resolve += ["--exclude-newer-package", f"{self.package}={today}"]
            resolved = subprocess.run(resolve, capture_output=True, text=True)
            if resolved.returncode != 0:
                print(resolved.stderr[-1500:], file=sys.stderr)
                return False
            self.installs += 1
            subprocess.run(sync, check=True)
        return True

    def _run(self) -> CaseReport:
        with tempfile.TemporaryDirectory(prefix="gallery-bisect-run-") as scratch:
            command = [self.python, "-m", "shared.harness", "run", self.case, "--only",
                       self.variant, "--jobs", "1", "--report-dir", scratch]  # fmt: skip
            run = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
            if run.returncode not in (0, 1):
                raise BisectError(f"the gallery run failed (exit {run.returncode}):\n"
                                  f"{run.stdout[-2000:]}{run.stderr[-2000:]}")  # fmt: skip
            return CaseReport.read(Path(scratch) / f"{self.case}.json")


def outcome(verdict, by_message: bool) -> str:
    """What a probe is compared by: the verdict, and with ``by_message`` the error's first line."""
    if by_message and verdict.error:
        return f"{verdict.kind}: {verdict.error.first_line}"
    return verdict.kind


def _first_line(verdict) -> str:
    return verdict.error.first_line if verdict.error else verdict.detail
