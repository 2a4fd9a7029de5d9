"""The static site: built from the real minicpm case and synthetic reports, checked in Chromium."""

from __future__ import annotations

import importlib.util
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT, first_answer
from PIL import Image

from shared.harness.catalog import CaseError, case_names, load_case
from shared.harness.cli import main
from shared.harness.report import CaseReport, ErrorRecord, Verdict
from shared.harness.site import check as site_check
from shared.harness.site.build import SiteError, build

FIX_LINE = "model.to(device=device, dtype=torch.bfloat16)"
MESSAGE = "mat1 and mat2 must have the same dtype, but got Float and BFloat16"
CULPRIT = (
    "TinyMiniCPMV.resampler.attn (MultiheadAttention): query Float on cpu "
    "vs in_proj_weight BFloat16 on cpu"
)
PRODUCER = (
    "TinyMiniCPMV.resampler.kv_proj (Linear): output float16 with 3 of 64 elements inf/NaN, "
    "from finite float16 inputs of max |x| 9.1"
)
# as the executor records a hazard (shared.culprit.hazards)
HAZARD = {"model": "model", "case": "minicpm", "kind": "float32-in-half",
          "where": "resampler.pos_embed", "detail": "float32 in a bfloat16 model"}  # fmt: skip
VERSIONS = {"torch": "2.13.0+cpu", "transformers": "5.23.0", "diffusers": "0.42.1",
            "peft": "0.21.2", "accelerate": "1.15.0"}  # fmt: skip


def variant_entry(name: str, kind: str, **fields) -> Verdict:
    """One variant of a report, as the harness writes it."""
    return Verdict(kind=kind, detail=f"{name} detail", variant=name, device="cpu", seconds=0.5,
                   **fields)  # fmt: skip


def report(cuda_devices: tuple[str, ...] = ()) -> CaseReport:
    error = ErrorRecord(
        type="RuntimeError",
        qualified_type="builtins.RuntimeError",
        message=MESSAGE,
        frames=("cases/minicpm/broken.py:<module>", "torch/nn/functional.py:_in_projection_packed"),
    )
    # as shared.culprit.as_record writes it, abridged
    culprit = {"module": "TinyMiniCPMV.resampler.attn", "role": "query", "input_dtype": "float32",
               "parameter": "in_proj_weight", "parameter_dtype": "bfloat16",
               "description": CULPRIT}  # fmt: skip
    embedding_check = {"label": "vision+text embedding", "dtype": "bfloat16",
                       "max_abs_err": 0.0343, "atol": 0.05, "rtol": 0.05}  # fmt: skip
    return CaseReport(
        case="minicpm",
        title="MiniCPM-V-2: a float32 resampler table breaks bf16 fine-tuning",
        finished="2026-01-02T03:04:05+00:00",
        python="3.11.7",
        versions=VERSIONS,
        cuda_devices=list(cuda_devices),
        variants=[
            variant_entry(
                "broken",
                "REPRODUCED",
                error=error,
                culprit=culprit,
                output_tail=f"resampler.pos_embed: torch.float32\n{MESSAGE}",
                hazards=[HAZARD],
            ),  # fmt: skip
            variant_entry("broken_trainer", "REPRODUCED", error=error),
            variant_entry("control_trainer_forward", "SKIPPED", note="a note on the control"),
            variant_entry("fixed", "PASSED", checks=[embedding_check]),
            variant_entry(
                "fixed_per_component",
                "REPRODUCED",
                silent=True,
                measurements=[
                    {
                        "label": "embedding error",
                        "measure": "max_abs_err",
                        "value": 26.9,
                        "detail": "bfloat16 output vs float32 reference",
                    }
                ],
                producer={"module": "TinyMiniCPMV.resampler.kv_proj", "description": PRODUCER},
            ),  # fmt: skip
            variant_entry("fixed_autocast", "FIX-FAILED", error=error),
        ],
    )


# The matrix store: one report per set (sets/<set>/<case>.json); two dated sets draw a timeline.
MATRIX = {
    "pinned": ("2.13.0", "REPRODUCED"),
    "era-2024": ("2.1.2", "NOT-REPRODUCED"),
    "as-of-2024-01-15": ("2.1.2", "NOT-REPRODUCED"),
    "as-of-2026-10-15": ("2.14.1", "REPRODUCED"),
}


def write_matrix(matrix_dir: Path) -> None:
    for library_set, (torch_version, kind) in MATRIX.items():
        error = ErrorRecord("RuntimeError", "builtins.RuntimeError", MESSAGE, ("x.py:f",))
        CaseReport(
            case="minicpm", title="t", finished="2026-01-02T03:04:05+00:00", python="3.11.7",
            versions={"torch": torch_version}, cuda_devices=[],
            variants=[Verdict(kind=kind, detail="ran clean on the old set", variant="broken",
                              device="cpu", error=error if kind == "REPRODUCED" else None)],
        ).write(matrix_dir / "sets" / library_set)  # fmt: skip


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def visible_text(html: str) -> str:
    """The text a reader sees, whitespace collapsed (tags dropped, entities decoded)."""
    parser = _Text()
    parser.feed(html)
    return " ".join("".join(parser.parts).split())


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory) -> Path:
    """The real minicpm case, with two declared fix pairs."""
    cases = tmp_path_factory.mktemp("cases")
    shutil.copytree(ROOT / "cases" / "minicpm", cases / "minicpm",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    toml = cases / "minicpm" / "case.toml"
    text = re.sub(r"\nfix(es|_changes) = .*", "", toml.read_text(encoding="utf-8"))
    for fixed in ("fixed", "fixed_autocast"):
        text = text.replace(f'name = "{fixed}"\n', f'name = "{fixed}"\nfixes = "broken"\n')
    toml.write_text(text, encoding="utf-8")
    return cases


@pytest.fixture(scope="module")
def built(cases_dir, tmp_path_factory) -> Path:
    reports = tmp_path_factory.mktemp("reports")
    report().write(reports / "runs")
    report(cuda_devices=("NVIDIA H100 80GB HBM3",)).write(reports / "cuda")
    write_matrix(reports / "matrix")
    out = reports / "site"
    build(out, reports / "runs", reports / "matrix", reports / "cuda", cases_dir)
    return out


def page_html(out: Path, page: str) -> str:
    return (out / page).read_text(encoding="utf-8")


def test_index_card_shows_the_last_run(built):
    text = visible_text(page_html(built, "index.html"))
    assert "3 REPRODUCED 1 PASSED 1 SKIPPED 1 FIX-FAILED" in text
    assert MESSAGE in text  # the symptom
    assert "upstream: OpenBMB/MiniCPM-V, issue #131" in text
    assert "last run on CPU, finished 2026-01-02 03:04 UTC" in text
    html = page_html(built, "index.html")
    assert 'href="https://github.com/OpenBMB/MiniCPM-V/issues/131"' in html
    assert 'href="minicpm/index.html"' in html


def test_case_page_shows_readme_diff_errors_and_measured_error(built):
    html = page_html(built, "minicpm/index.html")
    text = visible_text(html)
    assert "<h1>minicpm — MiniCPM-V-2's resampler breaks bf16 fine-tuning</h1>" in html
    assert "<table>" in html  # the README's variant table, through the tables extension
    new_side = [visible_text(cell) for cell in re.findall(r'<td class="new">(.*?)</td>', html)]
    assert any(FIX_LINE in line for line in new_side), new_side
    assert f"broken raised RuntimeError in torch/nn/functional.py:_in_projection_packed {MESSAGE}" \
        in text  # fmt: skip
    assert f"culprit {CULPRIT}" in text
    assert "fixed vision+text embedding bfloat16 3.4e-02 0.05" in text
    assert "note: a note on the control" in text
    assert "last verified 2026-01-02 03:04 UTC · CPU Python 3.11.7 · torch 2.13.0+cpu" in text
    assert "last verified on CUDA 2026-01-02 03:04 UTC · CUDA (1 × NVIDIA H100 80GB HBM3)" in text
    assert "/work/" not in html and str(ROOT) not in html  # no machine path on the site


def test_case_page_shows_every_declared_pair_and_what_each_variant_printed(built):
    text = visible_text(page_html(built, "minicpm/index.html"))
    assert "The fix: broken → fixed brokenfixed 1" in text
    assert "The fix: broken → fixed_autocast brokenfixed_autocast 1" in text
    assert (
        "What each variant printed (last lines) broken resampler.pos_embed: torch.float32" in text
    )


def test_silent_failures_are_shown_apart_from_exceptions(built):
    assert "a failure that raises nothing" not in visible_text(page_html(built, "index.html"))
    text = visible_text(page_html(built, "minicpm/index.html"))
    assert "REPRODUCED raises nothing" in text
    assert "fixed_per_component embedding error max_abs_err 26.9" in text
    assert f"fixed_per_component: {PRODUCER}" in text  # where its inf/NaN began


def test_the_case_page_says_where_the_audit_found_the_hazard(built):
    text = visible_text(page_html(built, "minicpm/index.html"))
    assert "float32-in-half: a float32 tensor meets half ones outside autocast" in text
    assert "broken: flagged at resampler.pos_embed: float32 in a bfloat16 model" in text
    assert "fixed: clean" in text
    assert "control_trainer_forward:" not in text.split("The hazard the audit looks for")[1][:400]


def test_matrix_is_a_set_by_variant_table(built):
    text = visible_text(page_html(built, "minicpm/index.html"))
    assert "set broken pinned torch 2.13.0 REPRODUCED" in text
    assert (
        "broken: NOT-REPRODUCED on torch <= 2.1.2, REPRODUCED from torch 2.13.0 [not bisected] "
        "(measured on era-2024, as-of-2024-01-15, pinned, as-of-2026-10-15)"
    ) in text
    assert "era-2024 torch 2.1.2 NOT-REPRODUCED ran clean on the old set" in text


def test_the_dated_sweep_is_a_timeline_on_the_case_page_and_the_timelines_page(built):
    for page in ("minicpm/index.html", "matrix/index.html"):
        html = page_html(built, page)
        svg = html[html.index("<svg") : html.index("</svg>")]
        assert "2024-01-15" in svg and "2026-10-15" in svg and "torch 2.14.1" in svg
        assert ">broken</text>" in svg and ">NOT-R</text>" in svg and ">REPRO</text>" in svg
        assert "era-2024" not in svg  # a named set is no date: table only


def test_a_case_that_does_not_load_fails_the_build_as_the_cli_does(cases_dir, tmp_path):
    broken_cases = tmp_path / "cases"
    shutil.copytree(cases_dir, broken_cases)
    (broken_cases / "halfdone").mkdir()
    (broken_cases / "halfdone" / "case.toml").write_text('title = "only a title"\n')
    with pytest.raises(SiteError) as caught:
        build(tmp_path / "site", tmp_path, tmp_path, tmp_path, broken_cases)
    with pytest.raises(CaseError) as cli_error:
        load_case("halfdone", broken_cases)
    assert str(caught.value) == str(cli_error.value)
    assert "'summary' is required" in str(caught.value)


def test_a_case_never_run_says_so_and_invents_no_verdict(cases_dir, tmp_path):
    nothing = tmp_path / "nothing"
    build(tmp_path / "site", nothing, nothing, nothing, cases_dir)
    index = page_html(tmp_path / "site", "index.html")
    case = page_html(tmp_path / "site", "minicpm/index.html")
    assert "not run yet" in visible_text(index)
    assert "last verified not run yet" in visible_text(case)
    assert "no CUDA run recorded yet" in visible_text(case)
    assert 'class="verdict' not in index + case
    assert "Version matrix" not in case


def test_every_link_is_relative_and_resolves_on_disk(built):
    for page in built.rglob("*.html"):
        for target in re.findall(r'(?:href|src)="([^"]*)"', page.read_text(encoding="utf-8")):
            if target.startswith(("https://", "http://", "data:")):
                continue
            assert not target.startswith("/"), f"{page}: {target} breaks from file://"
            assert (page.parent / target.split("#")[0]).is_file(), f"{page}: {target}"


def test_build_never_wipes_a_folder_it_did_not_build(cases_dir, tmp_path):
    (tmp_path / "precious.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(SiteError, match="not a site built here"):
        build(tmp_path, tmp_path, tmp_path, tmp_path, cases_dir)
    assert (tmp_path / "precious.txt").is_file()


def test_check_without_a_browser_says_how_to_install_it(built, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(site_check, "CHROMIUM", tmp_path / "no-chromium")
    assert main(["site", "check", "--out", str(built), "--screenshot", str(tmp_path)]) == 2
    assert "apt-get install -y chromium" in capsys.readouterr().err


@pytest.fixture
def browser():
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("playwright is not installed: pip install playwright (the 'site' group)")
    if not site_check.CHROMIUM.is_file():
        pytest.skip(f"{site_check.CHROMIUM} is not installed: apt-get install -y chromium")


def test_browser_loads_every_page_cleanly_and_screenshots_it(browser, built, tmp_path):
    shots = tmp_path / "shots"
    assert site_check.check(built, shots) == []
    assert sorted(path.name for path in shots.iterdir()) == [
        "index.png", "matrix__index.png", "minicpm__index.png"]  # fmt: skip
    with Image.open(shots / "minicpm__index.png") as image:
        assert image.width == 1280 and image.height > 2000  # the full page, not just the viewport


def test_browser_check_fails_on_broken_links_errors_and_outside_requests(
    browser, built, tmp_path, capsys
):
    copy = tmp_path / "site"
    shutil.copytree(built, copy)
    head = '<!doctype html><title>x</title><link rel="icon" href="data:,">'
    (copy / "links.html").write_text(
        head + '<a href="minicpm/index.html">fine</a> <a href="minicpm/missing.html">broken</a>',
        encoding="utf-8",
    )
    (copy / "wide.html").write_text(
        head + '<p class="culprit">' + "a." * 800 + "</p>", encoding="utf-8")
    (copy / "noisy.html").write_text(
        head + '<script>console.error("boom"); notDefined();</script>'
        '<img src="https://example.invalid/logo.png" alt="">',
        encoding="utf-8",
    )
    assert main(["site", "check", "--out", str(copy), "--screenshot", str(tmp_path / "s")]) == 1
    failures = [line for line in capsys.readouterr().err.splitlines() if "site: FAILED " in line]
    assert "links.html: broken link 'minicpm/missing.html' (HTTP 404)" in failures[0]
    noisy = "\n".join(failures[1:])
    assert "noisy.html: console error: boom" in noisy
    assert "noisy.html: page error: notDefined is not defined" in noisy
    assert "noisy.html: requests https://example.invalid/logo.png from outside the site" in noisy
    wide = [line for line in failures if "wide.html" in line]
    assert len(wide) == 1 and "px wide in a 1280 px window (sticks out: p.culprit" in wide[0], wide
    assert not [line for line in failures
                if "links.html" not in line and "noisy" not in line and "wide" not in line]


def search_texts() -> list[str]:
    """Every text of explain's corpus and real-text folders, and a few small ones."""
    import tomllib

    folder = ROOT / "tests" / "explain_texts"
    texts = [r["text"] for name in ("reports.toml", "reports_held_out.toml")
             for r in tomllib.loads((folder / name).read_text())["report"]]
    for sub in ("upstream", "held_out", "near_miss"):
        texts += [p.read_text().partition("\n")[2] for p in sorted((folder / sub).glob("*.txt"))]
    return texts + [
        MESSAGE,
        "RuntimeError: Input type (c10::BFloat16) and bias type (float) should be the same",
        "my SDXL pipeline gives a black image",
        "ValueError : Attemting to unscale fp16 Gradients",
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        "torch.AcceleratorError: CUDA error: device-side assert triggered",
        "RuntimeError: Input type (torch.FloatTensor) and weight type\n(torch.cuda.FloatTensor) "
        "should be the same",  # wrapped over two lines
        "RuntimeError: Index put requires the source and destination dtypes match, got Half for "
        "the destination and BFloat16 for the source.",  # documented with other dtypes only
        "SD 2.1 black image fp16",  # Stable Diffusion 2.x, not SDXL
        # issue 31: another library's frame, versions documented as not failing, another error
        # at the end, both sides of a type message, a message only a family documents
        'Traceback (most recent call last):\n  File "/x/site-packages/torch/utils/data/sampler.py"'
        ', line 164, in __iter__\n    yield from torch.randperm(n, generator=generator).tolist()\n'
        "RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'",
        "RuntimeError: Expected attn_mask dtype to be bool or to match query dtype, but got "
        "attn_mask.dtype: float and query.dtype: c10::BFloat16 instead.\ntorch==2.4.0",
        "RuntimeError: Expected attn_mask dtype to be bool or to match query dtype, but got "
        "attn_mask.dtype: float and query.dtype: c10::BFloat16 instead.\ntorch==2.1.2",
        "UserWarning: `input_ids` is on cpu, whereas the model is on cuda.\nKeyError: 'pixel'",
        "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor)"
        " should be the same",
        "TypeError: Got unsupported ScalarType BFloat16",
    ]


def first_answers(texts: list[str]) -> list[list[str]]:
    return [[found.step, found.kind, found.name] for found in map(first_answer, texts)]


def test_the_search_script_answers_as_explain_on_every_text():
    """search.js run by node over the exported index: the same step and first answer as
    `explain` for every corpus text, both halves (the browser test below does the same through
    the page)."""
    import json
    import subprocess

    from shared.harness.explain import catalog_index

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: apt-get install -y nodejs")
    script = ROOT / "shared" / "harness" / "site" / "templates" / "search.js"
    texts = search_texts()
    index = json.loads(catalog_index([load_case(name) for name in case_names()]))
    run = subprocess.run(
        [node, "-e", "const {makeExplain} = require(process.argv[1]);"
         "const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
         "const explain = makeExplain(input.index);"
         "process.stdout.write(JSON.stringify(input.texts.map(t => {"
         "const a = explain(t); "
         "return [a.step, a.kind, a.name, a.candidates, a.questions, a.variant || ''];"
         "})));", str(script)],
        input=json.dumps({"index": index, "texts": texts}), capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    # The step that answered (claims, differential, abstain), the answer, its cases in order
    # (those documenting the very message first), each candidate's check and the variant named.
    expected = [[found.step, found.kind, found.name, found.candidates, found.questions,
                 found.variant] for found in map(first_answer, texts)]  # fmt: skip
    got = json.loads(run.stdout)
    assert [(t, g) for t, g, e in zip(texts, got, expected, strict=True) if g != e] == []


def test_the_index_search_gives_explains_first_answer(browser, tmp_path):
    """Every corpus text through the site's search box and through `explain`: the same step
    (claims, differential, abstain) and first answer (case, differential, family or none)."""
    from playwright.sync_api import sync_playwright

    from shared.harness.paths import CASES_DIR, MATRIX_DIR

    out = tmp_path / "site"
    build(out, tmp_path / "no-runs", MATRIX_DIR, tmp_path / "no-cuda", CASES_DIR)
    texts = search_texts()
    expected = first_answers(texts)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=site_check.CHROMIUM, args=site_check.CHROMIUM_ARGS
        )
        page = chromium.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto((out / "index.html").as_uri())
        page.fill("#explain-text", texts[0])  # as a user types and clicks
        page.click("#explain-form button")
        typed = page.eval_on_selector_all(
            "#explain-results li", "items => items.map(i => [i.dataset.kind, i.dataset.name])"
        )
        # Every text through the same box and button, driven from inside the page: one round
        # trip for the corpus, not five a text (the box's submit handler answers synchronously).
        answered = page.evaluate(
            """texts => texts.map((text) => {
                document.getElementById("explain-text").value = text;
                document.querySelector("#explain-form button").click();
                const list = document.getElementById("explain-results");
                const shown = [...list.querySelectorAll("li")];
                return [list.dataset.step, shown.map((i) => [i.dataset.kind, i.dataset.name]),
                        document.getElementById("explain-status").innerText];
            })""",
            texts,
        )
        chromium.close()
    assert errors == []
    assert typed == answered[0][1]
    for text, (step, kind, name), (shown_step, shown, status) in zip(
        texts, expected, answered, strict=True
    ):
        assert shown_step == step, text
        if kind == "none":
            assert shown == [] and "no documented case" in status, text
        else:
            assert shown == [[kind, name]], text
