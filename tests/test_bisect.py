"""Release bisection: the search, on recorded verdicts. Installing releases from an index and
searching them for real (a local index of tiny packages): test_matrix_environments.py."""

from __future__ import annotations

import pytest

from shared.harness import bisect, store
from shared.harness.cli import main
from shared.harness.report import Bisection, Probe

RELEASES = ["0.9.0", "0.10.0", "0.11.0", "0.11.1", "0.12.0", "0.13.0", "0.13.2"]


class RecordedBisector:
    """Stands in for installing and running: each release's verdict(s) are given."""

    verdicts: dict[str, list[str]] = {}

    def __init__(self, case, variant, package, base, by_message=False, python=None) -> None:
        self.base, self.probes, self.installs, self.versions = base, [], 0, {"torch": "2.13.0"}
        self.cuda_devices: list[str] = []

    def probe(self, version: str) -> Probe:
        runs = self.verdicts[version]
        self.installs += runs[0] != bisect.UNINSTALLABLE
        first = self.probes[0].verdict if self.probes else runs[0]
        rerun = runs[-1] if runs[0] != first and runs[0] != bisect.UNINSTALLABLE else ""
        self.probes.append(Probe(version, runs[0], "", rerun))
        return self.probes[-1]


@pytest.fixture
def recorded(monkeypatch, tmp_path):
    monkeypatch.setattr(bisect, "_Bisector", RecordedBisector)
    monkeypatch.setattr(bisect, "_releases", lambda package, good, bad, pre: RELEASES)

    def run(verdicts: dict[str, list[str]]) -> tuple[int, Bisection | None]:
        RecordedBisector.verdicts = verdicts
        argv = ["bisect", "lora-fp16-gradscaler/peft_default", "peft", "0.9.0", "0.13.2",
                "--matrix-dir", str(tmp_path)]  # fmt: skip
        status = main(argv)
        stored = list((tmp_path / "bisections").glob("*.json"))
        return status, store.read_bisection(stored[0]) if stored else None

    return run


def verdicts_changing_at(first: str, **overrides: list[str]) -> dict[str, list[str]]:
    index = RELEASES.index(first)
    verdicts = {v: ["REPRODUCED"] if i < index else ["PASSED", "PASSED"]
                for i, v in enumerate(RELEASES)}  # fmt: skip
    return {**verdicts, **overrides}


def test_the_first_release_is_found_between_adjacent_releases(recorded):
    status, found = recorded(verdicts_changing_at("0.12.0"))
    assert status == 0
    assert (found.last_before, found.first_changed) == ("0.11.1", "0.12.0")
    assert (found.verdict_before, found.verdict_after, found.flaky) == (
        "REPRODUCED",
        "PASSED",
        False,
    )
    assert len(found.probes) <= 2 + 3  # both ends, then log2 of the five between
    assert found.installs == len(found.probes)


def test_a_release_that_does_not_install_is_stepped_around(recorded):
    status, found = recorded(verdicts_changing_at("0.12.0", **{"0.11.1": [bisect.UNINSTALLABLE]}))
    assert status == 0
    assert (found.last_before, found.first_changed) == ("0.11.0", "0.12.0")
    assert bisect.summary(found).count("not installable between them: 0.11.1") == 1


def test_a_changed_verdict_that_does_not_repeat_is_flaky_and_concludes_nothing(recorded, capsys):
    status, found = recorded(verdicts_changing_at("0.12.0", **{"0.13.2": ["PASSED", "REPRODUCED"]}))
    assert status == 1 and found.flaky
    assert "FLAKY lora-fp16-gradscaler/peft_default" in capsys.readouterr().out


def test_the_same_verdict_at_both_ends_is_refused(recorded, capsys):
    status, found = recorded({v: ["REPRODUCED"] for v in RELEASES})
    assert (status, found) == (2, None)
    error = capsys.readouterr().err
    assert "REPRODUCED on both 0.9.0 and 0.13.2" in error and ": nothing to bisect" in error
    assert "--base as-of-DATE (a sweep date when 0.9.0 was current)" in error


def test_without_bounds_and_without_a_stored_flip_it_asks_for_them(tmp_path, capsys):
    argv = ["bisect", "lora-fp16-gradscaler/peft_default", "peft", "--matrix-dir", str(tmp_path)]
    assert main(argv) == 2
    assert "give GOOD and BAD" in capsys.readouterr().err


def test_with_message_a_reworded_error_is_a_change():
    """torch 2.1 added the dtypes to the mat1/mat2 message: same verdict, another wording."""
    from shared.harness.report import ErrorRecord, Verdict

    def reproduced(message: str) -> Verdict:
        error = ErrorRecord("RuntimeError", "builtins.RuntimeError", message, ("x.py:f",))
        return Verdict(kind="REPRODUCED", detail=message, variant="broken", error=error)

    old = reproduced("mat1 and mat2 must have the same dtype")
    new = reproduced("mat1 and mat2 must have the same dtype, but got Float and BFloat16")
    assert bisect.outcome(old, by_message=False) == bisect.outcome(new, by_message=False)
    assert bisect.outcome(old, by_message=True) != bisect.outcome(new, by_message=True)
    assert bisect.outcome(new, by_message=True).startswith(
        "REPRODUCED: RuntimeError: mat1 and mat2"
    )
