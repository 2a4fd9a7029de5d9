// The index page's search box: `python -m shared.harness explain` (shared/harness/explain.py)
// step for step, over the data and constants it exports at build time as window.GALLERY_INDEX
// (search-index.js): the cases' messages and shapes, the BM25 tables bm25s computed, the
// spelling vocabulary (rapidfuzz's ratio is an LCS ratio, computed here the same way).
// Keep the two in step: tests compare their first answers on every corpus text (node, browser).
(function (root) {
  "use strict";

  function makeExplain(index) {
    const BOX = /[│╭╮╰╯─━┃┏┓┗┛❱╷╵▕▏]/g;
    const PROMPT = /^\s*(?:\[rank\d+\]:|-+>\s*\d*|\d+\s*[│|]|!!! Exception during processing !!!|>+)\s*/;
    const MARKUP = /\*\*|__|`+/g;
    const FRAMES = [
      /File "([^"]+)", line \d+, in (\S+)/g,
      /([\w./\\:~-]+\.py):\d+ in (\w+)/g,
      /File ([\w./\\:~-]+\.py):\d+, in (\w+)/g,
      /([\w./\\:~-]+\.py) in (\w+)\(/g,
    ];
    const CUDA_MATMUL = new RegExp(
      "expected (?:mat1|m1) and (?:mat2|m2) to have the same dtype, but got:\\s*" +
        "(?:struct )?(?:c10::)?(\\w+)\\s*!=\\s*(?:struct )?(?:c10::)?(\\w+)", "gi");
    const DTYPE = new RegExp(index.dtype_class.map(([p], i) => `(?<c${i}>\\b${p}\\b)`).join("|"), "gi");
    const NUMBER = /\b\d+(?:\.\d+)?\b/g;
    const WORD = /[a-z][a-z0-9_]*|<pad>|\d+[a-z]+/gi;
    const CAMEL = /(?<=[a-z0-9])(?=[A-Z][a-z])/g;
    const EXCEPTION = /\b[A-Z]\w*(?:Error|Exception)\s?:/;
    const CLASSES = /\b(?:CUDA)?(?:LOW|F32|F64)T?\b/g;
    const UNORDERED = new RegExp(index.unordered, "i");
    const SD2 = new RegExp(index.sd2, "gi");  // Stable Diffusion 2.x as users write it: one word
    const INTEGER_DTYPES = new RegExp(index.integer_dtypes);
    const STOPWORDS = new Set(index.stopwords);
    const VOCABULARY = index.vocabulary;
    const VOCABULARY_SET = new Set(VOCABULARY);
    const LIMITS = index.limits;
    const ANCHORS = ["raise site", "names", "project"];

    const cleanLines = (text) => text.split(/\r\n|\r|\n/).map((raw) =>
      raw.replace(BOX, " ").replace(PROMPT, "").replace(MARKUP, "").split(/\s+/).filter(Boolean)
        .join(" ")).filter(Boolean);

    function framesOf(text) {
      const found = [];
      const plain = text.replace(BOX, " ");
      for (const pattern of FRAMES) {
        for (const m of plain.matchAll(pattern)) {
          let path = m[1].replaceAll("\\", "/");
          for (const marker of ["site-packages/", "dist-packages/"]) {
            const parts = path.split(marker);
            path = parts[parts.length - 1];
          }
          found.push(`${path}:${m[2]}`);
        }
      }
      return found;
    }

    const canonical = (line) => line.replace(CUDA_MATMUL, (_, a, b) =>
      `mat1 and mat2 must have the same dtype, but got ${a} and ${b}`);

    function shape(message) {
      let text = canonical(message).replace(DTYPE, (...args) => {
        const groups = args[args.length - 1];
        const key = Object.keys(groups).find((k) => groups[k] !== undefined);
        const name = index.dtype_class[Number(key.slice(1))][1];
        return (args[0].toLowerCase().includes("cuda") ? "CUDA" : "") + name;
      }).replace(NUMBER, "#").replace(/\bcuda:#/gi, "cuda");
      if (UNORDERED.test(text)) {
        const classes = (text.match(CLASSES) || []).sort();
        text = text.replace(CLASSES, () => classes.shift());
      }
      return text.toLowerCase().split(/\s+/).filter(Boolean).join(" ");
    }

    function tokens(text) {
      text = text.replace(SD2, " sd2 ").replace(/\b([A-Za-z]{3,}) (\d)\b(?![.\d])/g, "$1$2")
        .replace(CAMEL, " ");
      const words = (text.match(WORD) || []).map((w) => w.toLowerCase())
        .filter((w) => !STOPWORDS.has(w));
      const out = [];
      words.forEach((word, i) => {
        out.push(word);
        const pair = i + 1 < words.length ? `${word} ${words[i + 1]}` : "";
        for (const group of index.synonyms) {
          if (group.includes(word) || group.includes(pair)) {
            out.push(...group.filter((w) => !w.includes(" ") && w !== word));
          }
        }
      });
      return out;
    }

    const stems = (words) => new Set(words.map((w) =>
      w.length > 3 && w.endsWith("s") && !w.endsWith("ss") ? w.slice(0, -1) : w));

    function ratio(a, b) {  // rapidfuzz's fuzz.ratio: 100 * 2 * LCS / (len a + len b)
      if (!a.length && !b.length) return 100;
      let previous = new Array(b.length + 1).fill(0);
      for (let i = 1; i <= a.length; i++) {
        const current = [0];
        for (let j = 1; j <= b.length; j++) {
          current[j] = a[i - 1] === b[j - 1] ? previous[j - 1] + 1
            : Math.max(previous[j], current[j - 1]);
        }
        previous = current;
      }
      return (200 * previous[b.length]) / (a.length + b.length);
    }

    function correctSpelling(line) {
      return line.replace(/[A-Za-z][A-Za-z0-9_]+/g, (word) => {
        const low = word.toLowerCase();
        if (word.length < LIMITS.min_correctable || VOCABULARY_SET.has(low)) return word;
        let best = null;
        let bestScore = -1;
        for (const candidate of VOCABULARY) {
          const score = ratio(low, candidate);
          if (score >= LIMITS.spelling_cutoff && score > bestScore) {
            best = candidate;
            bestScore = score;
          }
        }
        return best === null ? word : best;
      });
    }

    function errorLines(text) {
      const out = [];
      const lines = cleanLines(text);
      // A message wrapped over two lines (a terminal's width, a mail): its line joined to the next.
      const wrapped = lines.slice(0, -1).map((line, i) => [line, lines[i + 1]])
        .filter(([line, after]) => EXCEPTION.test(line) && !EXCEPTION.test(after) &&
          !after.startsWith("File ") && !after.startsWith("Traceback"))
        .map(([line, after]) => `${line} ${after}`);
      for (const line of [...lines, ...wrapped]) {
        out.push(line);
        const spaced = line.replace(CAMEL, " ");  // "scalar typeHalf": a space lost
        const corrected = correctSpelling(spaced);
        for (const variant of new Set([spaced, corrected])) {
          if (variant !== line) out.push(variant);
        }
      }
      return out;
    }

    function messageFamily(line) {
      const low = canonical(line).toLowerCase();
      for (const [family, pattern, generic] of index.family_messages) {
        if (new RegExp(pattern).test(low)) {
          if (family === "dtype-mix" && low.includes("input type")) {
            const sides = [...low.matchAll(/\(([^)]*)\)/g)].slice(0, 2).map((m) => m[1]);
            if (sides.length === 2 && sides[0].includes("cuda") !== sides[1].includes("cuda")) {
              return ["device-placement", true];
            }
          }
          return [family, generic];
        }
      }
      return ["", false];
    }

    // The cases documenting a message's wording with other floating dtypes; none for a clash
    // of integer dtypes (another failure).
    function sameWording(line) {
      const low = canonical(line).toLowerCase();
      const found = index.family_messages.find(([, pattern]) => new RegExp(pattern).test(low));
      if (!found || INTEGER_DTYPES.test(low)) return [];
      const pattern = new RegExp(found[1]);
      return [...new Set(index.signatures.filter((s) => s.shapes.some((x) =>
        pattern.test(x.toLowerCase()))).map((s) => s.case))].sort(byName);
    }

    function raiseSiteMatches(raisedIn, frame) {
      if (new RegExp(raisedIn).test(frame)) return true;
      const slash = raisedIn.indexOf("/");
      if (slash < 0) return false;
      const tail = raisedIn.split("/").pop();
      return frame.startsWith(raisedIn.slice(0, slash) + "/") &&
        new RegExp(tail).test(frame.split("/").pop());
    }

    const namesSubject = (names, words) =>
      names.every((spellings) => spellings.some((w) => words.has(w)));

    function anchoredTo(sig, text, frames) {
      if (sig.raised_in && frames.some((f) => !f.startsWith("torch/") &&
          raiseSiteMatches(sig.raised_in, f))) return "raise site";
      const names = index.subjects[sig.case];
      if (names.length && namesSubject(names, new Set(tokens(text)))) {
        return "names " + names.map((spellings) => spellings[0]).join(", ");
      }
      const project = index.projects[sig.case];
      if (project && text.toLowerCase().includes(project)) return "project " + project;
      return "";
    }

    const anchorStrength = (hit) => {
      const i = ANCHORS.findIndex((a) => hit.anchored.startsWith(a));
      return i < 0 ? 0 : ANCHORS.length - i;
    };

    function casesWith(shapes) {
      const wanted = new Set(shapes);
      return new Set(index.signatures.filter((s) => s.shapes.some((x) => wanted.has(x)))
        .map((s) => s.case));
    }

    function findHits(text, lines) {
      const frames = framesOf(text);
      const hits = [];
      for (const sig of index.signatures) {
        for (const line of lines) {
          const lineC = canonical(line);
          let how;
          if (sig.patterns.some((p) => new RegExp(p.replaceAll("`", ""), "i").test(lineC))) {
            how = "message";
          } else if (sig.shapes.some((s) => s && shape(lineC).includes(s))) {
            how = "shape";
          } else {
            continue;
          }
          let [, generic] = messageFamily(line);
          generic = generic || casesWith(sig.shapes).size > 1;
          hits.push({ case: sig.case, variant: sig.variant, how, generic,
            anchored: anchoredTo(sig, text, frames), where: sig.where, line });
          break;
        }
      }
      return hits;
    }

    function bm25(table, query) {
      const scores = Object.fromEntries(table.names.map((n) => [n, 0]));
      for (const term of query) {
        for (const [doc, value] of table.terms[term] || []) scores[table.names[doc]] += value;
      }
      return scores;
    }

    const byName = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
    const members = (family) => Object.keys(index.cases).filter((n) =>
      index.cases[n].family === family).sort(byName);

    function caseFromHits(specific, hits, query) {
      const rank = { message: 2, shape: 1 };
      specific.sort((a, b) => anchorStrength(b) - anchorStrength(a) ||
        rank[b.how] - rank[a.how] || byName(a.case, b.case));
      let best = specific[0];
      if (!best.anchored) {
        const tied = specific.filter((h) => !h.anchored && rank[h.how] === rank[best.how]);
        if (new Set(tied.map((h) => h.case)).size > 1) {
          const scores = bm25(index.case_bm25, query);
          for (const h of tied) {
            if (scores[h.case] > scores[best.case] || (scores[h.case] === scores[best.case] &&
                -h.case.charCodeAt(0) > -best.case.charCodeAt(0))) best = h;
          }
        }
      }
      let sureness = best.how === "message" ? "documented message"
        : "same message, other dtypes or devices";
      if (best.anchored) sureness += ` + ${best.anchored}`;
      const others = [...new Set(hits.map((h) => h.case))].filter((c) => c !== best.case)
        .sort(byName);
      return { kind: "case", name: best.case, sureness, variant: best.variant,
        where: best.where, candidates: others };
    }

    // The case that is the usual cause of a generic message in this line and the variant it
    // names (["", ""] if none).
    function usualCause(line, words) {
      const lineC = canonical(line);
      for (const name of Object.keys(index.usual_causes).sort(byName)) {
        for (const [message, named, unlessNamed, variant] of index.usual_causes[name]) {
          if (new RegExp(message, "i").test(lineC) &&
              (!named.length || named.some((w) => words.has(w))) &&
              !unlessNamed.some((w) => words.has(w))) return [name, variant];
        }
      }
      return ["", ""];
    }

    function usualCauseAnswer(lines, query, hits) {
      const words = new Set(query);
      for (const line of lines) {
        const [name, variant] = usualCause(line, words);
        if (!name) continue;
        const hit = hits.find((h) => h.case === name);
        return { kind: "case", name, sureness: index.usual_cause,
          variant: variant || (hit ? hit.variant : ""), where: hit && !variant ? hit.where : "",
          candidates: [...new Set(hits.map((h) => h.case))].filter((c) => c !== name)
            .sort(byName) };
      }
      return null;
    }

    function familyFromHits(hits) {
      const family = messageFamily(hits[0].line)[0] || index.cases[hits[0].case].family;
      // The cases documenting this very message before those documenting its shape.
      const exact = [...new Set(hits.filter((h) => h.how === "message").map((h) => h.case))]
        .sort(byName);
      const rest = [...new Set(hits.map((h) => h.case))].filter((c) => !exact.includes(c))
        .sort(byName);
      return { kind: "family", name: family, sureness: "family, by a generic message",
        candidates: [...exact, ...rest], matched: hits[0].line };
    }

    function fromSymptom(query, text, unknownError) {
      const scores = bm25(index.case_bm25, query);
      const ranked = Object.keys(scores).sort((a, b) => scores[b] - scores[a] || byName(a, b));
      const present = new Set(query);
      const queryStems = stems(query);
      for (const name of unknownError ? [] : ranked.slice(0, 3)) {
        if (scores[name] < LIMITS.symptom_min) break;
        if (index.subjects[name].length && !namesSubject(index.subjects[name], present)) continue;
        if (!index.phrase_words[name].some((w) => queryStems.has(w))) continue;
        const said = new Set((text.match(WORD) || []).map((w) => w.toLowerCase()));
        const words = index.case_docs[name].filter((w) => said.has(w)).slice(0, 6);
        return { kind: "case", name, sureness: "symptom words: " + words.join(", "),
          candidates: [] };
      }
      const familyScores = bm25(index.family_bm25, query);
      let best = null;
      for (const f of Object.keys(familyScores)) {
        if (best === null || familyScores[f] > familyScores[best] ||
            (familyScores[f] === familyScores[best] && f > best)) best = f;
      }
      if (familyScores[best] >= LIMITS.family_min) {
        return { kind: "family", name: best, sureness: "family, by symptom words",
          candidates: members(best) };
      }
      return { kind: "none", name: "", sureness: "nothing fits", candidates: ranked.slice(0, 3) };
    }

    return function explain(text) {
      const lines = errorLines(text);  // spelling-corrected once: each step reads them
      const hits = findHits(text, lines);
      const query = tokens(text);
      const specific = hits.filter((h) => !h.generic || h.anchored);
      if (specific.length) return caseFromHits(specific, hits, query);
      const usual = usualCauseAnswer(lines, query, hits);
      if (usual) return usual;
      if (hits.length) return familyFromHits(hits);
      for (const line of lines) {
        const [family] = messageFamily(line);
        if (family) return { kind: "family", name: family, sureness: "family, by its message",
          candidates: sameWording(line) };
      }
      return fromSymptom(query, text, cleanLines(text).some((l) => EXCEPTION.test(l)));
    };
  }

  if (typeof module !== "undefined") {  // node: the parity test
    module.exports = { makeExplain };
    return;
  }
  const index = root.GALLERY_INDEX;
  const explain = makeExplain(index);

  function show(found, list, status) {
    list.replaceChildren();
    if (found.kind === "none") {
      status.textContent = "no documented case; closest: " + (found.candidates.join(", ") || "none");
      return;
    }
    const item = document.createElement("li");
    item.dataset.kind = found.kind;
    item.dataset.name = found.name;
    if (found.kind === "case") {
      const answer = index.cases[found.name];
      status.textContent = `${found.name} (${found.sureness})`;
      const link = document.createElement("a");
      link.href = `${found.name}/index.html`;
      link.textContent = `${found.name}: ${answer.title}`;
      const detail = document.createElement("div");
      detail.className = "note";
      detail.textContent = `Cause: ${answer.cause}` +
        (answer.fix_line ? ` Fix (${answer.fix}): ${answer.fix_line}` : "") +
        (found.candidates.length ? ` Also documents it: ${found.candidates.join(", ")}` : "");
      item.append(link, detail);
    } else {
      status.textContent = `family ${found.name}: ${index.families[found.name]} (${found.sureness})`;
      item.textContent = (found.candidates.length ? "cases: " + found.candidates.join(", ") + ". " : "") +
        "Wrap one step in shared.culprit's MismatchGuard (NonFiniteGuard for NaN): it names the module; " +
        index.diagnose_line + ".";
    }
    list.append(item);
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
})(typeof window !== "undefined" ? window : globalThis);
