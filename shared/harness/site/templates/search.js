// The index page's search box: the rules of `python -m shared.harness explain`
// (shared/harness/explain.py) over the same signatures, exported at build time as
// window.GALLERY_INDEX (search-index.js). Keep the two in step: a browser test compares them.
(function () {
  "use strict";
  const index = window.GALLERY_INDEX;
  const tiers = index.tiers;
  const DTYPE_WORDS = new RegExp(
    "(?:struct\\s+)?(?:c10::)?(?:complex)?(?:b?float(?:16|32|64)?|half|double|bfloat16|" +
      "fp16|bf16|fp32|int(?:8|16|32|64)?|long|bool|byte)\\b|" +
      "torch\\.(?:cuda\\.)?\\w+tensor|\\b(?:cuda|cpu|meta|mps|xpu)(?::\\d+)?\\b",
    "gi"
  );
  const NUMBER = /\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b/gi;
  const FRAME = /File "([^"]+)", line \d+, in (\S+)/g;
  const FINAL_LINE = /^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt)): ?(.*)$/;

  function shape(message) {
    const masked = message.toLowerCase().replace(DTYPE_WORDS, "~").replace(NUMBER, "#");
    return masked.split(/\s+/).filter(Boolean).join(" ");
  }

  function relative(path) {
    for (const marker of ["site-packages/", "dist-packages/"]) {
      const at = path.indexOf(marker);
      if (at >= 0) return path.slice(at + marker.length);
    }
    return path;
  }

  function parse(text) {
    const frames = [...text.matchAll(FRAME)].map((m) => relative(m[1]) + ":" + m[2]);
    let error = "";
    let message = text.trim();
    const lines = text.trim().split("\n").map((line) => line.trim()).reverse();
    for (const line of lines) {
      const found = line.match(FINAL_LINE);
      if (found) {
        error = found[1].split(".").pop();
        message = found[2];
        break;
      }
    }
    return { text: text.trim(), error, message, frames };
  }

  function score(signature, query) {
    let tier = 0;
    let how = "";
    const wanted = shape(query.message);
    if (query.message && signature.patterns.some((p) => new RegExp(p).test(query.message))) {
      tier = tiers.message; how = "message";
    } else if (query.message && signature.shapes.includes(wanted)) {
      tier = tiers.shape; how = "same message, other dtypes or devices";
    } else {
      const phrases = signature.phrases.map(shape);
      if (wanted.length >= tiers.min_phrase && (
        signature.shapes.some((s) => s.includes(wanted)) ||
        phrases.some((p) => p.length >= tiers.min_phrase && (p.includes(wanted) || wanted.includes(p)))
      )) {
        tier = tiers.phrase; how = "symptom phrase";
      }
    }
    if (!tier) return [0, ""];
    if (signature.raised_in && query.frames.some((f) => new RegExp(signature.raised_in).test(f))) {
      tier += tiers.raise_site; how += " + raise site";
    }
    if (signature.project && query.text.toLowerCase().includes(signature.project)) {
      tier += tiers.project; how += " + project named";
    }
    if (query.error && query.error === signature.error.split(".").pop()) {
      tier += tiers.type; how += " + type";
    }
    return [tier, how];
  }

  function explain(text) {
    const query = parse(text);
    const best = {};
    for (const signature of index.signatures) {
      const [rank, how] = score(signature, query);
      if (rank && (!(signature.case in best) || rank > best[signature.case].rank)) {
        best[signature.case] = { case: signature.case, variant: signature.variant, rank, how };
      }
    }
    return Object.values(best).sort((a, b) =>
      b.rank - a.rank || (a.case < b.case ? -1 : a.case > b.case ? 1 : 0));
  }

  function show(results, list, status) {
    list.replaceChildren();
    const tied = results.filter((match) => match.rank === (results[0] || {}).rank);
    status.textContent = !results.length ? "no documented case matches"
      : tied.length > 1
        ? `${tied.length} cases match equally well (${tied.map((m) => m.case).join(", ")}): ` +
          "they document the same message; a whole traceback's frames would tell them apart"
        : `${results.length} documented case(s) match, best first`;
    for (const match of results) {
      const answer = index.cases[match.case];
      const item = document.createElement("li");
      item.dataset.case = match.case;
      const link = document.createElement("a");
      link.href = `${match.case}/index.html`;
      link.textContent = `${match.case}: ${answer.title}`;
      const detail = document.createElement("div");
      detail.className = "note";
      detail.textContent = `matched ${match.variant} by ${match.how}. Cause: ${answer.cause}` +
        (answer.fix ? ` Fix (${answer.fix}): ${answer.fix_line}` : "");
      item.append(link, detail);
      list.append(item);
    }
  }

  const form = document.getElementById("explain-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = document.getElementById("explain-text").value;
    const status = document.getElementById("explain-status");
    const list = document.getElementById("explain-results");
    if (!text.trim()) {
      list.replaceChildren();
      status.textContent = "paste an error message, a traceback or a symptom";
      return;
    }
    show(explain(text), list, status);
  });
})();
