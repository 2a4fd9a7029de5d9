"""The matrix store: a measurement record, one folder per library set (``reports/README.md``).

    reports/matrix/sets/<set>/set.json      the header: each environment the set's cases ran in
    reports/matrix/sets/<set>/<case>.json   one case's latest run there: a row per variant
    reports/matrix/bisections/<...>.json    a bisection, with the environment held fixed

An environment (an entry of ``set.json``, keyed by ``id``, a hash of its content) records what
was asked (the requirements and the installer's options, a lock file's hash, what the
:data:`~shared.harness.libraries.UNDECLARED_IMPORTS` rule added), every installed
distribution with its version, Python, the machine's kind and CUDA devices, and when it was first
recorded. A case file names its environment and holds one row per variant: the verdict, its
evidence (checks, measurements, knobs, culprit, producer, hazards, warnings), the error's type,
first line and raise frames; never the case's title or notes (``case.toml`` holds them) nor the
output the variant printed (``.gallery/runs`` keeps that for a run).

Run reports of the harness's own format (``CaseReport``) are read too, converted in memory;
:func:`convert` rewrites them, and older bisections, into this format: it is idempotent (a file
already in it is left byte for byte), so it can be re-run after any merge:

    python -m shared.harness matrix convert
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from shared.harness.libraries import VERSIONED_PACKAGES
from shared.harness.report import Bisection, CaseReport, Probe, Verdict

SETS, BISECTIONS = "sets", "bisections"
HEADER = "set.json"
# Fields of a run report's verdict a stored row leaves out: copied from case.toml (the note), or
# the printed output (kept per run in .gallery/runs, not in the record).
DROPPED = ("note", "output_tail")
NOT_RECORDED = (
    "converted from a run report, which recorded only these libraries' versions: what was "
    "asked and the rest of the environment were not recorded"
)


def environment_id(environment: dict) -> str:
    content = {k: v for k, v in environment.items() if k not in ("id", "recorded")}
    canonical = json.dumps(content, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def new_environment(
    asked: dict | None,
    installed: dict[str, str],
    python: str,
    machine: str,
    cuda_devices: list[str],
    recorded: str,
    *,
    complete: bool = True,
) -> dict:
    """An environment entry; ``complete`` is False where only some packages are known."""
    environment = {
        "asked": asked,
        "installed": dict(sorted(installed.items(), key=lambda item: item[0].lower())),
        "complete": complete,
        "python": python,
        "machine": machine,
        "cuda_devices": list(cuda_devices),
    }
    if not complete:
        environment["note"] = NOT_RECORDED
    return {"id": environment_id(environment), **environment, "recorded": recorded}


def versions_of(environment: dict) -> dict[str, str]:
    """The versioned libraries (``libraries.VERSIONED_PACKAGES``) the environment held."""
    installed = {name.lower(): version for name, version in environment["installed"].items()}
    return {name: installed[name] for name in VERSIONED_PACKAGES if name in installed}


def row_of(verdict: Verdict) -> dict:
    """A stored row: the verdict and its evidence, the error as its first line and frames."""
    row = {k: v for k, v in dataclasses.asdict(verdict).items() if k not in DROPPED}
    if verdict.error:
        lines = verdict.error.message.strip().splitlines()
        row["error"] = {**row["error"], "message": lines[0] if lines else ""}  # the error line
        row["error"]["frames"] = list(verdict.error.frames)
    return row


def case_record(report: CaseReport, environment: dict) -> dict:
    return {
        "case": report.case,
        "environment": environment["id"],
        "finished": report.finished,
        "variants": [row_of(verdict) for verdict in report.variants],
    }


def environment_of_report(report: CaseReport) -> dict:
    """The environment an old run report implies: its six versions, Python and CUDA devices."""
    return new_environment(
        asked=None,
        installed={name: v for name, v in report.versions.items() if v},
        python=report.python,
        machine="not recorded",
        cuda_devices=report.cuda_devices,
        recorded=report.finished,
        complete=False,
    )


def _is_run_report(data: dict) -> bool:
    return "title" in data and "versions" in data


def _dump(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


# --- reading ---------------------------------------------------------------------------------


def read_header(folder: Path) -> dict:
    path = folder / HEADER
    if not path.exists():
        return {"set": folder.name, "environments": []}
    return json.loads(path.read_text(encoding="utf-8"))


def read_set(folder: Path) -> list[tuple[dict, dict]]:
    """Each stored case of a set folder as (record, its environment), by case name; a run
    report not converted yet is converted in memory."""
    environments = {env["id"]: env for env in read_header(folder)["environments"]}
    found = []
    for path in sorted(folder.glob("*.json")):
        if path.name == HEADER:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        if _is_run_report(data):
            report = CaseReport.from_json(json.dumps(data))
            environment = environment_of_report(report)
            found.append((case_record(report, environment), environment))
            continue
        if data["environment"] not in environments:
            raise ValueError(f"{path}: environment {data['environment']} not in {HEADER}")
        found.append((data, environments[data["environment"]]))
    return found


def read_bisection(path: Path) -> Bisection:
    """A stored bisection (with or without its environment header) as the report type."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("environment", None)
    return Bisection(**{**data, "probes": [Probe(**probe) for probe in data["probes"]]})


# --- writing ---------------------------------------------------------------------------------


def store_case(folder: Path, record: dict, environment: dict) -> Path:
    """Write one case's record into a set folder and keep the header exact: its environment
    added, environments no case refers to any more removed."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record['case']}.json"
    path.write_text(_dump(record), encoding="utf-8")
    _write_header(folder, [environment])
    return path


def _write_header(folder: Path, new: list[dict]) -> None:
    header = read_header(folder)
    known = {env["id"]: env for env in header["environments"]}
    for environment in new:  # an environment seen again keeps the date it was first seen
        first = known.setdefault(environment["id"], environment)
        if environment["recorded"] < first["recorded"]:
            known[environment["id"]] = environment
    used = set()
    for path in folder.glob("*.json"):
        if path.name != HEADER:
            data = json.loads(path.read_text(encoding="utf-8"))
            used.add(data["environment"] if "environment" in data else None)
    kept = sorted((env for env in known.values() if env["id"] in used),
                  key=lambda env: (env["recorded"], env["id"]))  # fmt: skip
    text = _dump({"set": folder.name, "environments": kept})
    path = folder / HEADER
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def store_bisection(folder: Path, bisection: Bisection, environment: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / bisection.file_name
    data = {**dataclasses.asdict(bisection), "environment": environment}
    path.write_text(_dump(data), encoding="utf-8")
    return path


# --- conversion and checks -------------------------------------------------------------------


def convert(matrix_dir: Path) -> list[Path]:
    """Rewrite every run report under ``sets/`` and every bisection without an environment
    into the store's format; files already in it are left untouched. Returns what changed."""
    changed = []
    for folder in sorted(p for p in (matrix_dir / SETS).glob("*") if p.is_dir()):
        environments = []
        for path in sorted(folder.glob("*.json")):
            if path.name == HEADER:
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
            if not _is_run_report(data):
                continue
            report = CaseReport.from_json(json.dumps(data))
            environment = environment_of_report(report)
            path.write_text(_dump(case_record(report, environment)), encoding="utf-8")
            environments.append(environment)
            changed.append(path)
        before = (folder / HEADER).read_text(encoding="utf-8") if (folder / HEADER).exists() else ""
        _write_header(folder, environments)
        if (folder / HEADER).read_text(encoding="utf-8") != before:
            changed.append(folder / HEADER)
    for path in sorted((matrix_dir / BISECTIONS).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "environment" in data:
            continue
        data["environment"] = new_environment(
            asked=None, installed={k: v for k, v in data["versions"].items() if v},
            python="not recorded", machine="not recorded", cuda_devices=[],
            recorded=data["finished"], complete=False,
        )  # fmt: skip
        path.write_text(_dump(data), encoding="utf-8")
        changed.append(path)
    return changed


def problems(matrix_dir: Path, declared: dict[str, tuple[str, ...]]) -> list[str]:
    """What makes the store not a complete record: a declared (set, case) cell without a stored
    case, a file not converted, a case naming an environment its header lacks."""
    found = []
    for library_set, cases in declared.items():
        folder = matrix_dir / SETS / library_set
        for case in cases:
            if not (folder / f"{case}.json").exists():
                found.append(f"missing: {library_set} declares {case}, the store has no run of it "
                             f"(nox -s \"matrix({library_set})\" -- {case})")  # fmt: skip
    for folder in sorted(p for p in (matrix_dir / SETS).glob("*") if p.is_dir()):
        ids = {env["id"] for env in read_header(folder)["environments"]}
        for path in sorted(folder.glob("*.json")):
            if path.name == HEADER:
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
            if _is_run_report(data):
                found.append(f"not converted: {path.relative_to(matrix_dir)} "
                             "(python -m shared.harness matrix convert)")  # fmt: skip
            elif data["environment"] not in ids:
                found.append(f"no environment {data['environment']} in {folder.name}/{HEADER} "
                             f"for {path.name}")  # fmt: skip
    for path in sorted((matrix_dir / BISECTIONS).glob("*.json")):
        if "environment" not in json.loads(path.read_text(encoding="utf-8")):
            found.append(f"not converted: {path.relative_to(matrix_dir)} "
                         "(python -m shared.harness matrix convert)")  # fmt: skip
    return found
