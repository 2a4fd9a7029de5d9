// The index page's search box: `python -m shared.harness explain` (shared/harness/explain/)
// step for step (parse, messages, frames, claims, differential, answer, in that order), over
// the data and constants it exports at build time as window.GALLERY_INDEX (search-index.js):
// the cases' messages and shapes, the BM25 tables bm25s computed, the spelling vocabulary
// (rapidfuzz's ratio is an LCS ratio, computed here the same way). Keep the two in step: tests
// compare the step that answered and the answer on every corpus text (node, browser).
(function (root) {
  "use strict";

  function makeExplain(index) {
    const BOX = /[│╭╮╰╯─━┃┏┓┗┛❱╷╵▕▏]/g;
    const PROMPT = /^\s*(?:\[rank\d+\]:|-+>\s*\d*|\d+\s*[│|]|!!! Exception during processing !!!|>+)\s*/;
    const MARKUP = /\*\*|__|`+|\\(?=['"])/g;
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
    const EXCEPTION = new RegExp(index.exception);  // a pasted exception line
    const RAISE_LINE = new RegExp(index.raise_line);  // a traceback's source line of a raise
    const CLASSES = /\b(?:CUDA)?(?:LOW|F32|F64)T?\b/g;
    const UNORDERED = new RegExp(index.unordered, "i");
    const SD2 = new RegExp(index.sd2, "gi");  // Stable Diffusion 2.x as users write it: one word
    const SD1 = new RegExp(index.sd1, "i");  // Stable Diffusion 1.x: a version named, not SDXL
    const SDXL_NAMED = new RegExp(index.sdxl_named, "i");
    const SDXL_FILE = new RegExp(index.sdxl_file, "gi");  // sd_xl_base_1.0.safetensors
    const COMFY_BANNER = new RegExp(index.comfy_banner, "g");  // ComfyUI's, no model output
    const EXCLAIMED = new RegExp(index.exclaimed, "g");  // what an overflowed float16 model writes
    const NAN_WORD = new RegExp(index.nan_word, "gi");  // "NaNs" is no camel-case "Na Ns"
    const INTEGER_DTYPES = new RegExp(index.integer_dtypes);
    const STOPWORDS = new Set(index.stopwords);
    const VOCABULARY = index.vocabulary;
    const VOCABULARY_SET = new Set(VOCABULARY);
    const LIMITS = index.limits;
    const ANCHORS = ["raise site", "names", "project"];
    const DTYPE_ONE = new RegExp(DTYPE.source, "i");
    const PASTED_VERSION = new RegExp(index.pasted_version, "gi");
    const TYPE_SIDES = index.type_sides.map((pattern) => new RegExp(pattern));
    const SIZE = index.differential_size;  // at most three candidates, of the three best
    const WARNING_SITE = new RegExp(index.warning_site);
    const OTHER_DEVICE = new RegExp(index.other_device, "i");  // a device no case runs on
    const EXTENSION_OP = new RegExp(index.extension_op);  // an extension's own operator called
    const TORCH_BACKEND = new RegExp(index.torch_backend);  // a message naming torch's backend
    const SIDE_DEVICE = new RegExp(index.side_devices.join("|"), "g");  // a tensor type's device
    const QUANTIZED_SIDE = new RegExp(index.quantized_side, "i");  // the quantization family
    const WITHOUT_NAN = new Set(index.without_nan);

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
      text = text.replace(COMFY_BANNER, " ").replace(SD2, " sd2 ").replace(SDXL_FILE, " sdxl ")
        .replace(EXCLAIMED, " exclamation ").replace(NAN_WORD, " nan ")
        .replace(/\b([A-Za-z]{3,})[ _-](\d)\b(?![.\d])/g, "$1$2")
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

    // A paste's tokens. Stable Diffusion 1.x named, SDXL not: "sd1", and not the SDXL that
    // "stable diffusion" alone implies (its synonyms).
    function pastedWords(text) {
      const words = tokens(text);
      if (SD1.test(text) && !SDXL_NAMED.test(text)) {
        return [...words.filter((w) => w !== "sdxl"), "sd1"];
      }
      return words;
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

    // Both tensor types a type message names, [on CUDA, dtype class] each.
    function operandSides(low) {
      for (const pattern of TYPE_SIDES) {
        const found = low.match(pattern);
        if (!found) continue;
        return [found[1], found[2]].map((side) => {
          const m = side.replace(SIDE_DEVICE, " ").match(DTYPE_ONE);
          let dtype = "";
          if (m) {
            const key = Object.keys(m.groups).find((k) => m.groups[k] !== undefined);
            dtype = index.dtype_class[Number(key.slice(1))][1].replace(/T+$/, "");
          }
          return [index.side_devices.find((d) => side.includes(d)) || "cpu", dtype];
        });
      }
      return [];
    }

    // The family of a message, read from both its sides: devices that differ are a placement
    // clash, one device with two dtypes a dtype clash, a quantized side (float8, an 8-bit
    // integer matmul weight) the quantization family.
    function messageFamily(line) {
      const low = canonical(line).toLowerCase();
      for (const [family, pattern, generic] of index.family_messages) {
        if (new RegExp(pattern).test(low)) {
          const sides = operandSides(low);
          if (sides.length === 2 && sides[0][0] !== sides[1][0]) return ["device-placement", true];
          if (family === "dtype-mix" && QUANTIZED_SIDE.test(low)) return ["quantization", true];
          if (sides.length === 2 && (sides[0][1] || sides[1][1]) && sides[0][1] !== sides[1][1]) {
            return ["dtype-mix", true];
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

    function anchoredTo(sig, text, words, frames) {
      if (sig.raised_in && frames.some((f) =>
          !index.shared_sites.some((site) => f.startsWith(site)) &&
          raiseSiteMatches(sig.raised_in, f))) return "raise site";
      const names = index.subjects[sig.case];
      if (names.length && namesSubject(names, words)) {
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
      const words = new Set(pastedWords(text));  // read once, not once per hit
      const hits = [];
      // Each line's canonical form and shape, made once: every signature compares them.
      const canonicalLines = lines.map(canonical);
      const shapes = canonicalLines.map(shape);
      for (const sig of index.signatures) {
        for (const [i, line] of lines.entries()) {
          const lineC = canonicalLines[i];
          let how;
          if (sig.patterns.some((p) => new RegExp(p.replaceAll("`", ""), "i").test(lineC))) {
            how = "message";
          } else if (sig.shapes.some((s) => s && shapes[i].includes(s))) {
            how = "shape";
          } else {
            continue;
          }
          let [, generic] = messageFamily(line);
          generic = generic || casesWith(sig.shapes).size > 1;
          hits.push({ case: sig.case, variant: sig.variant, how, generic,
            anchored: anchoredTo(sig, text, words, frames), where: sig.where, line });
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
      return { step: "claims", kind: "case", name: best.case, sureness, variant: best.variant,
        where: best.where, matched: best.line, candidates: others, questions: [] };
    }

    // Each case's usual-cause declarations, by name, their regexes built once.
    const USUAL_CAUSES = Object.keys(index.usual_causes).sort(byName).map((name) => [name,
      index.usual_causes[name].map(([message, ...rest]) => [new RegExp(message, "i"), ...rest])]);

    // The first pasted line holding a generic message a case declares itself the usual cause
    // of ({case, variant, decides, line}), or null; where that declaration does not decide, a
    // later line whose declaration of the same case does (generate's own warning beside the
    // device check it led to). None where a pasted message names another device (usual causes
    // are CPU/CUDA mechanisms), where the call that raised is an extension's own operator (its
    // kernels, not torch's, unless the message names torch's backend), or the paste ends in
    // another error.
    function usualCauseIn(paste) {
      if (paste.lines.some((line) => OTHER_DEVICE.test(line) && messageFamily(line)[0])) return null;
      const words = new Set(paste.query);
      // later lines are read only while the first one found does not decide
      let first = null;
      let chosen = null;
      for (const line of paste.lines) {
        const found = usualCauseOfLine(line, words);
        if (!found) continue;
        if (!first) first = found;
        if (found.case === first.case && found.decides) { chosen = found; break; }
      }
      if (!first) return null;
      chosen = chosen || first;
      if (EXTENSION_OP.test(paste.text) && !TORCH_BACKEND.test(chosen.line)) return null;
      return endsElsewhere(paste, chosen.line) ? null : chosen;
    }

    function usualCauseOfLine(line, words) {
      const lineC = canonical(line);
      for (const [name, declared] of USUAL_CAUSES) {
        for (const [message, named, unlessNamed, variant, decides] of declared) {
          if (message.test(lineC) &&
              (!named.length || named.some((w) => words.has(w))) &&
              !unlessNamed.some((w) => words.has(w))) {
            return { case: name, variant, decides, line };
          }
        }
      }
      return null;
    }

    // ---- the steps: parse -> messages -> frames -> claims -> differential -> answer ----

    function innermostLibraryFrame(text) {
      const plain = text.replace(BOX, " ");
      let best = null;
      for (const pattern of FRAMES) {
        for (const m of plain.matchAll(pattern)) {
          const item = [m.index, m[1].replaceAll("\\", "/"), m[2]];
          if (best === null || item[0] > best[0] || (item[0] === best[0] && (item[1] > best[1] ||
              (item[1] === best[1] && item[2] > best[2])))) best = item;
        }
      }
      // A traceback that no exception line follows was cut short: its last frame is no raise site.
      if (best === null || !EXCEPTION.test(plain.slice(best[0]))) return "";
      for (const marker of ["site-packages/", "dist-packages/"]) {
        const at = best[1].indexOf(marker);
        if (at >= 0) return `${best[1].slice(at + marker.length)}:${best[2]}`;
      }
      return "";
    }

    function pastedVersions(text) {
      const found = {};
      for (const m of text.matchAll(PASTED_VERSION)) {
        found[m[1].toLowerCase().replace("pytorch", "torch")] = m[2];
      }
      return found;
    }

    function parse(raw) {
      // Full-width punctuation as CJK input methods type it ("Input type （BFloat16）") read as ASCII.
      const text = raw.normalize("NFKC");
      const lines = cleanLines(text);
      // An exception line that ends at its colon has its message on the next line (wrapped).
      const exceptions = lines.map((line, i) => [line, lines[i + 1] || ""])
        .filter(([line]) => EXCEPTION.test(line))
        .map(([line, after]) => (line.endsWith(":") ? `${line} ${after}` : line));
      return { text, lines: errorLines(text), frames: framesOf(text),
        innermost: innermostLibraryFrame(text), query: pastedWords(text),
        lastException: exceptions.length ? exceptions[exceptions.length - 1] : "",
        versions: pastedVersions(text) };
    }

    // PEP 440 as the `when` specifiers use it: releases, a pre-release (a, b, rc) below its final.
    function parseVersion(text) {
      const m = text.trim().match(/^v?(\d+(?:\.\d+)*)(?:\.?(a|b|rc)\.?(\d+))?/i);
      if (!m) return null;
      const pre = m[2] ? [{ a: 0, b: 1, rc: 2 }[m[2].toLowerCase()], Number(m[3])] : [3, 0];
      return { release: m[1].split(".").map(Number), pre };
    }

    function compareVersions(x, y) {
      const n = Math.max(x.release.length, y.release.length);
      for (let i = 0; i < n; i++) {
        const d = (x.release[i] || 0) - (y.release[i] || 0);
        if (d) return Math.sign(d);
      }
      return Math.sign(x.pre[0] - y.pre[0] || x.pre[1] - y.pre[1]);
    }

    function versionIn(version, specifiers) {
      const v = parseVersion(version);
      return specifiers.split(",").map((s) => s.trim()).filter(Boolean).every((spec) => {
        const [, op, rest] = spec.match(/^(===|~=|==|!=|<=|>=|<|>)\s*(.*)$/);
        if ((op === "==" || op === "!=") && rest.endsWith(".*")) {
          const prefix = rest.slice(0, -2).split(".").map(Number);
          const same = prefix.every((part, i) => (v.release[i] || 0) === part);
          return op === "==" ? same : !same;
        }
        const c = compareVersions(v, parseVersion(rest));
        if (op === "~=") {
          const bound = parseVersion(rest).release.slice(0, -1);
          return c >= 0 && bound.every((part, i) => (v.release[i] || 0) === part);
        }
        return { "==": c === 0, "===": c === 0, "!=": c !== 0, "<=": c <= 0, ">=": c >= 0,
          "<": c < 0, ">": c > 0 }[op];
      });
    }

    // The pasted versions inside a `when` entry documented as not failing (affected()).
    function documentedNotFailing(name, variant, versions) {
      if (!Object.keys(versions).length) return false;
      for (const packages of index.cases[name].not_failing[variant] || []) {
        const inside = packages.filter(([pkg]) => pkg in versions)
          .map(([pkg, spec]) => versionIn(versions[pkg], spec));
        if (inside.length && inside.every(Boolean)) return true;
      }
      return false;
    }

    // The file a pasted warning line says it was issued in ("" if none), site-packages cut.
    function warningSite(line) {
      const found = line.match(WARNING_SITE);
      if (!found) return "";
      let path = found[1].replaceAll("\\", "/");
      for (const marker of ["site-packages/", "dist-packages/"]) {
        const at = path.indexOf(marker);
        if (at >= 0) path = path.slice(at + marker.length);
      }
      return path;
    }

    // What in the paste says a documented message is not this case's failure ("" if nothing).
    function contradiction(hit, paste) {
      const sig = index.signatures.find((s) => s.case === hit.case && s.variant === hit.variant &&
        s.where === hit.where);
      if (hit.how === "message" && paste.innermost && !paste.innermost.startsWith("torch/nn/") &&
          !(sig.raised_in && raiseSiteMatches(sig.raised_in, paste.innermost))) {
        return `raised in ${paste.innermost}, where this case's message never comes from`;
      }
      const site = warningSite(hit.line);
      if (hit.how === "message" && site && sig.raised_in && !raiseSiteMatches(sig.raised_in, site)) {
        return `issued in ${site}, where this case's warning never comes from`;
      }
      if (hit.how === "message" && sig.ends.length && RAISE_LINE.test(hit.line) &&
          !sig.ends.some((end) => new RegExp(end, "i").test(canonical(hit.line)))) {
        return "the raise line's message goes on past this case's: another check's wording";
      }
      const device = hit.line.match(OTHER_DEVICE);
      if (hit.how === "message" && device) {
        return `the message names the ${(device[1] || device[2]).toLowerCase()} device, where no case runs`;
      }
      if (documentedNotFailing(hit.case, hit.variant, paste.versions)) {
        return "your versions are documented as not failing: another mechanism?";
      }
      return "";
    }

    function messages(paste) {
      return findHits(paste.text, paste.lines).map((hit) =>
        ({ ...hit, contradicted: contradiction(hit, paste) }));
    }

    // The paste ends with another exception than the claim's line, one nothing explains.
    function endsElsewhere(paste, line) {
      const last = paste.lastException;
      if (!last || last.includes(line) || line.includes(last)) return false;
      const message = last.includes(": ") ? last.slice(last.indexOf(": ") + 2) : "";
      // the traceback's source line of the raise, quoting that exception's message
      if (message && RAISE_LINE.test(line) && line.includes(message)) return false;
      const variants = errorLines(last);
      if (variants.some((v) => messageFamily(v)[0])) return false;
      return !findHits(last, variants).length;
    }

    function claims(paste, hits, usual) {
      const standing = hits.filter((h) => !h.contradicted);
      const specific = standing.filter((h) => !h.generic || h.anchored);
      if (specific.length) {
        const found = caseFromHits(specific, hits, paste.query);
        return endsElsewhere(paste, found.matched) ? null : found;
      }
      if (!usual || !usual.decides) return null;  // other common causes: it leads the differential
      const name = usual.case;
      const hit = standing.find((h) => h.case === name);
      return { step: "claims", kind: "case", name, sureness: index.usual_cause,
        variant: usual.variant || (hit ? hit.variant : ""),
        where: hit && !usual.variant ? hit.where : "", matched: usual.line, questions: [],
        candidates: [...new Set(standing.map((h) => h.case))].filter((c) => c !== name)
          .sort(byName) };
    }

    // The paste speaks of a quantized base: a generic dtype clash is then no family's to name.
    const QUANTIZED_BASE = new RegExp(index.quantized_base);  // on the lower-cased text
    const quantized = (paste) => QUANTIZED_BASE.test(paste.text.toLowerCase());

    const differentialAnswer = (ranked, why, family, line) => ({ step: "differential",
      kind: "differential", name: family, family, sureness: why, matched: line, variant: "",
      candidates: ranked, questions: ranked.slice(0, SIZE).map((n) => index.cases[n].asks) });

    // No documented case: the family its message names, and its cases.
    const familyAnswer = (family, why) => ({ step: "abstain", kind: "family", name: family,
      family, sureness: `family, by ${why}`, questions: [], candidates: members(family).sort(byName) });

    function differential(paste, hits, usual) {
      const leader = usual && !usual.decides ? usual.case : "";
      if (hits.length || leader) {  // a generic message, or a documented one something contradicts
        const line = leader ? usual.line : hits[0].line;
        let family = messageFamily(line)[0] || index.cases[leader || hits[0].case].family;
        if (family === "dtype-mix" && quantized(paste)) family = "";
        // The usual cause of a message with others first; then the cases documenting this very
        // message before those documenting its shape, each group by the paste's other words.
        const scores = bm25(index.case_bm25, paste.query);
        const byScore = (a, b) => scores[b] - scores[a] || byName(a, b);
        const exact = [...new Set(hits.filter((h) => h.how === "message").map((h) => h.case))]
          .sort(byScore);
        const rest = [...new Set(hits.map((h) => h.case))].filter((c) => !exact.includes(c))
          .sort(byScore);
        const ranked = [...exact, ...rest];
        const contradicted = (hits.find((h) => h.contradicted) || {}).contradicted || "";
        const why = contradicted ? `documented message, but ${contradicted}`
          : leader ? index.leads_why : "a generic message: it names the clash, never its cause";
        const found = differentialAnswer(leader ? [leader, ...ranked.filter((c) => c !== leader)]
          : ranked, why, family, line);
        // the variant a leading declaration names: which way round (the model never moved)
        found.variant = leader ? usual.variant : "";
        return found;
      }
      for (const line of paste.lines) {
        const [family] = messageFamily(line);
        if (family === "dtype-mix" && quantized(paste)) {  // quantization's, or a plain mix
          return { step: "abstain", kind: "none", name: "", family: "", candidates: [],
            sureness: index.quantized_why, questions: [] };
        }
        if (family) return { ...familyAnswer(family, "its message"), candidates: sameWording(line) };
      }
      const namesNothing = new RegExp(index.names_nothing, "i");
      if (paste.lines.some((line) => namesNothing.test(line))) {  // any family would be a guess
        return { step: "abstain", kind: "none", name: "", family: "", candidates: [],
          sureness: index.names_nothing_why, questions: [] };
      }
      const unknownError = Boolean(paste.lastException);
      const scores = bm25(index.case_bm25, paste.query);
      const ranked = Object.keys(scores).sort((a, b) => scores[b] - scores[a] || byName(a, b));
      const present = new Set(paste.query);
      const said = stems(paste.query);
      // An SD tool, its version unnamed: every version stays possible.
      if (index.sd_tools.some((w) => present.has(w)) &&
          !index.sd_versions.some((w) => present.has(w))) {
        index.sd_versions.forEach((w) => present.add(w));
      }
      // A NaN in the paste rules out a case whose symptom is no NaN at all.
      const ruledOut = said.has("nan") ? WITHOUT_NAN : new Set();
      // A case whose mechanism the description states (a module kept in a list) comes first, on
      // any model; the others by their words, among those whose subject it names.
      const described = ranked.filter((name) => !ruledOut.has(name) &&
        (index.describes[name] || []).some((p) => new RegExp(p, "i").test(paste.text)));
      const byWords = ranked.slice(0, SIZE).filter((name) =>
        scores[name] >= LIMITS.symptom_min && !ruledOut.has(name) && !described.includes(name) &&
        (!index.subjects[name].length || namesSubject(index.subjects[name], present)) &&
        index.phrase_words[name].some((w) => said.has(w)));
      const candidates = unknownError ? [] : [...described, ...byWords].slice(0, SIZE);
      if (candidates.length) {
        return differentialAnswer(candidates, "symptom words (they never decide alone)", "", "");
      }
      // Words decide no family, as they decide no case: only a message does (above).
      const training = said.has("nan") && index.training_words.some((w) => said.has(w));
      const why = unknownError ? index.unknown_error_why
        : training ? index.training_nan_why : index.description_why;
      return { step: "abstain", kind: "none", name: "", family: "", sureness: why, candidates: [],
        questions: [] };
    }

    return function explain(text) {
      const paste = parse(text);
      const hits = messages(paste);
      const usual = usualCauseIn(paste);  // read once: claimed where it decides, else it leads
      return claims(paste, hits, usual) || differential(paste, hits, usual);
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
    list.dataset.step = found.step;  // the step that answered: claims, differential, abstain
    const diagnose = `Run it under diagnose: ${index.diagnose}`;
    if (found.kind === "none") {
      status.textContent = `no documented case; closest: none (${found.sureness}). ` + diagnose;
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
    } else if (found.kind === "differential") {
      status.textContent = `no case claimed (${found.sureness}); it may be one of these:`;
      const checks = document.createElement("div");
      found.questions.forEach((question, i) => {
        const name = found.candidates[i];
        const entry = document.createElement("div");
        const link = document.createElement("a");
        link.href = `${name}/index.html`;
        link.textContent = `${i + 1}. ${name}: ${index.cases[name].title}`;
        const check = document.createElement("div");
        check.className = "note";
        check.textContent = `Check: ${question}` + (i === 0 && found.variant  // its way round
          ? ` Usually (${found.variant}): ${index.cases[name].variant_notes[found.variant]}` : "");
        entry.append(link, check);
        checks.append(entry);
      });
      const more = found.candidates.slice(found.questions.length);
      const tail = document.createElement("div");
      tail.className = "note";
      tail.textContent = (more.length ? `Also documented with this message: ${more.join(", ")}. `
        : "") + (found.family ? `Family ${found.family}: ${index.families[found.family]}. ` : "") +
        diagnose;
      item.append(checks, tail);
    } else {
      status.textContent = `no documented case; closest family ${found.name}: ` +
        `${index.families[found.name]} (${found.sureness})`;
      item.textContent = (found.candidates.length ? "cases: " + found.candidates.join(", ") + ". " : "") +
        "Wrap one step in shared.culprit's MismatchGuard (NonFiniteGuard for NaN): it names the " +
        "module. " + diagnose;
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
