"""Score `explain` on both halves of the real-report corpus (tests/explain_texts/README.md).

    python tools/explain_scores.py            (from the repository root; --misses lists each miss)

The two halves: reports.toml (tuned on; it holds the earlier held-out batches too, whose misses
were read) and reports_held_out.toml (a new batch collected separately, labelled and committed
before explain ran on it, never tuned on). Per half, issue 31's measures:
- claims right: of the reports explain claims a case for, the share whose case it is;
- covered errors, right case first: of the errors and errors in sentences (no symptom
  description) whose case is in the tree, the share it claims;
- covered errors, claimed or leading: the same, claimed or first in an unclaimed differential
  (a usual cause its reports contradict leads one, with its question);
- symptoms, right case among candidates: of the covered symptom descriptions, the share where the
  case is claimed or among the first three candidates named;
- uncovered claimed: of the reports no case in the tree documents, the share a case is claimed for;
- wrong family: of the family answers and differentials naming a family, those naming another
  family than the report's (a report labelled with a family).
Where reports_held_out_second_labels.toml holds a blind second labelling of the held-out half,
also how often the two labellers agree, and the measures on the reports both label alike.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shared.harness.catalog import case_names  # noqa: E402
from shared.harness.explain import explain  # noqa: E402

TEXTS = ROOT / "tests" / "explain_texts"
HALVES = {"tuned (reports.toml)": "reports.toml",
          "held out (reports_held_out.toml, never tuned on)": "reports_held_out.toml"}  # fmt: skip


def reports(name: str) -> list[dict]:
    return tomllib.loads((TEXTS / name).read_text(encoding="utf-8"))["report"]


def named(first, case: str) -> bool:
    return (first.kind == "case" and first.name == case) or case in first.candidates[:3]


def score(items: list[dict], in_tree: set[str],
          first_answer=None) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """The measures and the misses; ``first_answer(text)``: explain's first answer (a caller
    that already holds them passes its own)."""
    first_answer = first_answer or (lambda text: explain(text)[0])
    counts = {m: [0, 0] for m in ("claims right", "covered errors, right case first",
                                  "covered errors, claimed or leading",
                                  "symptoms, right case among candidates",
                                  "uncovered claimed", "wrong family")}  # fmt: skip
    misses = []
    for report in items:
        first = first_answer(report["text"])
        case, covered = report["case"], report["case"] in in_tree
        claimed = first.kind == "case"
        if claimed:
            counts["claims right"][0] += first.name == case
            counts["claims right"][1] += 1
        if covered and report["form"] != "symptom":
            counts["covered errors, right case first"][0] += claimed and first.name == case
            counts["covered errors, right case first"][1] += 1
            counts["covered errors, claimed or leading"][0] += (claimed and first.name == case) or (
                first.kind == "differential" and first.candidates[:1] == [case])
            counts["covered errors, claimed or leading"][1] += 1
        if covered:
            if report["form"] == "symptom":
                counts["symptoms, right case among candidates"][0] += named(first, case)
                counts["symptoms, right case among candidates"][1] += 1
        else:
            counts["uncovered claimed"][0] += claimed
            counts["uncovered claimed"][1] += 1
        if first.kind in ("family", "differential") and first.name and report["family"]:
            counts["wrong family"][0] += first.name != report["family"]
            counts["wrong family"][1] += 1
        wrong = (claimed and first.name != case) or (covered and not named(first, case)) or (
            first.kind in ("family", "differential") and first.name and report["family"]
            and first.name != report["family"])  # fmt: skip
        if wrong:
            misses.append(f"    {report['url']}  [{report['form']}] expected {case or '-'} "
                          f"({report['family'] or '-'}); got {first.kind} {first.name} "
                          f"{first.candidates[:3]}")  # fmt: skip
    return {k: (v[0], v[1]) for k, v in counts.items()}, misses


def main() -> int:
    in_tree = set(case_names())
    for title, name in HALVES.items():
        items = reports(name)
        measured, misses = score(items, in_tree)
        print(f"{title}: {len(items)} reports")
        for measure, (got, of) in measured.items():
            share = f"{100 * got / of:5.1f} %" if of else "   -  "
            print(f"  {measure:40s} {share}  ({got} of {of})")
        if "--misses" in sys.argv:
            print("\n".join(misses))
    second = TEXTS / SECOND_LABELS
    if second.exists():
        print(agreement(reports("reports_held_out.toml"), reports(SECOND_LABELS), in_tree))
    return 0


SECOND_LABELS = "reports_held_out_second_labels.toml"  # a blind second labelling of the held out


def agreement(first: list[dict], second: list[dict], in_tree: set[str]) -> str:
    """How often two labellers of the held-out half agree, and explain's scores where they do."""
    other = {r["url"]: r for r in second}
    both = [r for r in first if r["url"] in other]
    same = [r for r in both if (r["case"], r["family"]) == (other[r["url"]]["case"],
                                                            other[r["url"]]["family"])]  # fmt: skip
    cases = sum(r["case"] == other[r["url"]]["case"] for r in both)
    families = sum(r["family"] == other[r["url"]]["family"] for r in both)
    measured, _ = score(same, in_tree)
    lines = [f"second labelling ({SECOND_LABELS}): {len(both)} reports, the same case for "
             f"{cases}, the same family for {families}, both for {len(same)}; explain on those:"]
    lines += [f"  {m:40s} {f'{100 * g / o:5.1f} %' if o else '   -  '}  ({g} of {o})"
              for m, (g, o) in measured.items()]  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
