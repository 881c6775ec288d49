/* Chalkboard's answer checker in the browser: the twin of book/checker.py (grading) and
 * units/reading.py (reading "1.152 T parameters", "2.63 × 10¹⁴ tokens", "$0.18 per million
 * tokens", "24 ms", "8x"), function for function, on the same data: the unit table
 * (javascripts/units.js, written by book.checker.unit_table from the project's pint registry)
 * and each problem's spec (its data-answer). The tests run both on many answers to every site
 * problem and require the same verdict and message. Runs in the browser (no server) and under
 * Node for the tests. */
(function (root) {
  "use strict";
  var TABLE = null;
  var MAX_CHARS = 200, MAX_POWER = 12, SLACK = 1e-12;
  var WS = "[ \\t\\n\\r\\f\\v]";
  var SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹";
  var DIGITS = "\\d{1,3}(?:,\\d{3})+(?:\\.\\d*)?|\\d+(?:\\.\\d*)?|\\.\\d+";
  var POWER = "(?:(?:\\^|\\*\\*)" + WS + "*[({]?" + WS + "*([-+]?\\d+)" + WS + "*[)}]?|([⁻⁺]?[" + SUP + "]+))";
  var NUMBER = new RegExp("^([-+]?)(" + DIGITS + ")(?:[eE]([-+]?\\d+))?");
  var TIMES_TEN = new RegExp("^" + WS + "*(?:[x×X*·]|\\\\times)" + WS + "*10" + WS + "*" + POWER);
  var TEN_TO = new RegExp("^" + POWER);
  var FACTOR = new RegExp("^([A-Za-zµ_]+)(?:\\^([-+]?\\d+)|([⁻⁺]?[" + SUP + "]+))?$");
  var PLAIN = /^\d+(?:\.\d+)?$/;
  var BARE_NUMBER = /^[ \t\n\r\f\v]*([0-9]+(?:\.[0-9]+)?)[ \t\n\r\f\v]*$/;
  var LEADING_NUMBER = /^(\d+(?:\.\d+)?)([A-Za-z][\s\S]*)$/;
  var GROUP_SPACE = /(\d)[\u00a0\u2009\u202f](?=\d{3}(?!\d))/g;
  var SPACES = /[\u00a0\u2009\u202f]/g;
  var PER = new RegExp("(^|" + WS + ")per(?=" + WS + "|$)", "g");
  var ABOUT = new RegExp("^(?:(?:about|around|roughly|approximately|approx\\.?)" + WS + "+|[~≈]" + WS + "*)", "i");
  var SPLIT = new RegExp("[*]+|" + WS + "+");
  var EDGES = new RegExp("^" + WS + "+|" + WS + "+$", "g");
  /* a design problem's answer after the option chosen (book/checker.py's LABEL, LABEL_WORD) */
  var LABEL = /^([A-Za-z][A-Za-z0-9 ._()+\/-]{0,39}?)[ \t]*[:,][ \t\n\r\f\v]*/;
  var LABEL_WORD = /^([A-Za-z0-9()._+&=-]+)[ \t\n\r\f\v]+/;
  var LABEL_FILLERS = ["at", "in", "on", "with", "and", "using", "for", "is", "=", "-", "+", "&"];
  var PLAIN_NUMBER = /^[0-9.,]+$/;
  var MAX_LABELS = 6;

  var TOKEN = -1, SEQUENCE = -1; /* the token and sequence dimensions' places in the table's dims */
  var TIME = -1, DATA = -1, COMPUTE = -1, CURRENCY = -1;

  function setUnits(table) {
    TABLE = table; TOKEN = table.dims.indexOf("token"); SEQUENCE = table.dims.indexOf("sequence");
    TIME = table.dims.indexOf("time"); DATA = table.dims.indexOf("information"); CURRENCY = table.dims.indexOf("currency");
    COMPUTE = table.dims.indexOf("compute");
  }
  function own(obj, key) { return Object.prototype.hasOwnProperty.call(obj, key); }
  function strip(s) { return s.replace(EDGES, ""); }
  function replaceAll(s, a, b) { return s.split(a).join(b); }
  function Fail(message) { this.message = message; }

  /* -- reading (units/reading.py) -------------------------------------------------------- */

  function power(plain, sup) {
    if (plain !== undefined) return parseInt(plain, 10);
    var s = "";
    for (var i = 0; i < sup.length; i++) {
      var c = sup.charAt(i);
      s += c === "⁻" ? "-" : c === "⁺" ? "+" : String(SUP.indexOf(c));
    }
    return parseInt(s, 10);
  }

  function read(text, isNoun) {
    if (typeof text !== "string") throw new Fail("give a number followed by a unit, like 24 ms");
    if (Array.from(text).length > MAX_CHARS) throw new Fail("that is longer than " + MAX_CHARS + " characters");
    var t = replaceAll(replaceAll(strip(text), "\u2212", "-"), "\u03bc", "\u00b5");
    t = t.replace(GROUP_SPACE, "$1").replace(SPACES, " ");
    t = t.replace(ABOUT, "");
    var currency = false;
    if (t.indexOf("US$") === 0) { currency = true; t = t.slice(3).replace(/^[ \t\n\r\f\v]+/, ""); }
    else if (t.indexOf("$") === 0) { currency = true; t = t.slice(1).replace(/^[ \t\n\r\f\v]+/, ""); }
    var m = NUMBER.exec(t);
    if (!m) throw new Fail("give a number followed by a unit, like 24 ms");
    var sign = m[1], digits = replaceAll(m[2], ",", ""), exponent = m[3] === undefined ? 0 : parseInt(m[3], 10);
    t = t.slice(m[0].length);
    var ten = digits === "10" && m[3] === undefined ? TEN_TO.exec(t) : null;
    if (ten) {
      digits = "1"; exponent = power(ten[1], ten[2]);
      t = t.slice(ten[0].length);
    } else {
      var times = TIMES_TEN.exec(t);
      if (times) { exponent += power(times[1], times[2]); t = t.slice(times[0].length); }
    }
    if (Math.abs(exponent) > 400) throw new Fail("that power of ten is out of range");
    var number = parseFloat(sign + digits + "e" + exponent);
    var rest = strip(t);
    if (currency) rest = "USD " + rest;
    var reading = { number: number, factors: [], bareBytes: false, scaled: false, ratio: false, perScale: false };
    var lower = rest.toLowerCase();
    if (own(TABLE.ratios, lower) || own(TABLE.ratios, rest)) {
      reading.number = number * TABLE.ratios[own(TABLE.ratios, lower) ? lower : rest];
      reading.ratio = true;
      return reading;
    }
    readUnit(rest, reading, isNoun);
    return reading;
  }

  function words(part) {
    var out = [], pieces = part.split(SPLIT);
    for (var i = 0; i < pieces.length; i++) {
      var w = pieces[i];
      if (!w) continue;
      var lead = LEADING_NUMBER.exec(w);
      if (lead) out.push(lead[1], lead[2]); else out.push(w);
    }
    return out;
  }

  function readUnit(rest, reading, isNoun) {
    if (!rest) return;
    for (var symbol in TABLE.symbols) {
      if (own(TABLE.symbols, symbol)) rest = replaceAll(rest, symbol, " " + TABLE.symbols[symbol] + " ");
    }
    rest = replaceAll(replaceAll(rest, "·", "*"), "**", "^").replace(/[ \t\n\r\f\v]*\^[ \t\n\r\f\v]*/g, "^").replace(PER, "$1/");
    var parts = rest.split("/");
    for (var i = 0; i < parts.length; i++) {
      var sign = i === 0 ? 1 : -1;
      var part = strip(parts[i]);
      if (part.charAt(0) === "(" && part.charAt(part.length - 1) === ")") part = part.slice(1, -1);
      var ws = words(part);
      if (!ws.length) {
        if (i === 0 && parts.length > 1) continue;
        throw new Fail("a unit is missing around '/'");
      }
      var named = reading.factors.length;
      for (var j = 0; j < ws.length; j++) {
        var word = ws[j], scale = null;
        if (PLAIN.test(word) && parseFloat(word) > 0) {
          scale = parseFloat(word);
        } else if (own(TABLE.scales, word)) {
          var after = j + 1 < ws.length ? FACTOR.exec(ws[j + 1]) : null;
          if (word !== "B" || (after !== null && isNoun(after[1]))) scale = TABLE.scales[word];
          else reading.bareBytes = true;
        }
        if (scale !== null) {
          reading.scaled = true;
          reading.number = sign > 0 ? reading.number * scale : reading.number / scale;
          continue;
        }
        var m = FACTOR.exec(word);
        if (!m) throw new Fail("cannot read the unit '" + word + "'");
        var p = sign * (m[2] !== undefined || m[3] !== undefined ? power(m[2], m[3]) : 1);
        if (Math.abs(p) > MAX_POWER) throw new Fail("the power of '" + m[1] + "' is too large");
        var lowered = m[1].toLowerCase();
        reading.factors.push([own(TABLE.sequence_words, lowered) ? TABLE.sequence_words[lowered] : m[1], p]);
      }
      if (sign < 0 && reading.factors.length === named) reading.perScale = true; /* "/M": only a scale under the line */
    }
  }

  /* -- grading (book/checker.py) --------------------------------------------------------- */

  function lookup(name) {
    var candidates = [name];
    if (name.length >= 3) {
      var relaxed = "";
      for (var i = 0; i < name.length; i++) {
        var c = name.charAt(i);
        relaxed += c === "B" ? c : c.toLowerCase();
      }
      candidates.push(name.charAt(0) + relaxed.slice(1), relaxed);
    }
    for (var k = 0; k < candidates.length; k++) {
      var found = lookupExact(candidates[k]);
      if (found !== null) return found;
    }
    var nouns = TABLE.count_nouns || {}, lower = name.toLowerCase();
    if (own(nouns, lower)) { /* "replicas": a count of its own, dimensionless */
      return [1, TABLE.dims.map(function () { return 0; }), nouns[lower]];
    }
    return null;
  }

  function lookupExact(name) {
    if (own(TABLE.units, name)) return TABLE.units[name];
    var prefixes = Object.keys(TABLE.prefixes).sort(function (a, b) { return b.length - a.length; });
    for (var i = 0; i < prefixes.length; i++) {
      var p = prefixes[i], rest = name.slice(p.length);
      if (name.indexOf(p) === 0 && rest && own(TABLE.units, rest)) {
        var u = TABLE.units[rest];
        return [TABLE.prefixes[p] * u[0], u[1], u[2]];
      }
    }
    return null;
  }

  function isNoun(name) {
    var u = lookup(name);
    return u !== null && !u[1][0] && !u[1][1];
  }

  function measure(text) {
    var reading = read(text, isNoun);
    var n = TABLE.dims.length, factor = 1, dims = [], counts = {}, k, c;
    for (k = 0; k < n; k++) dims.push(0);
    for (var i = 0; i < reading.factors.length; i++) {
      var name = reading.factors[i][0], p = reading.factors[i][1];
      var u = lookup(name);
      if (u === null) throw new Fail("unknown unit '" + name + "'");
      for (var r = 0; r < Math.abs(p); r++) factor = p > 0 ? factor * u[0] : factor / u[0];
      for (k = 0; k < n; k++) dims[k] += p * u[1][k];
      if (u[2]) counts[u[2]] = (counts[u[2]] || 0) + p;
    }
    var kept = {};
    for (c in counts) if (own(counts, c) && counts[c]) kept[c] = counts[c];
    var none = !reading.factors.length;
    var f = reading.factors;
    var alone = reading.bareBytes && f.length === 1 && f[0][0] === "B" && f[0][1] === 1;
    /* "$7.3B": dollars and B alone, which a cost's answer reads as billions of dollars */
    var money = reading.bareBytes && f.length === 2 && f[0][0] === "USD" && f[0][1] === 1 && f[1][0] === "B" && f[1][1] === 1;
    return {
      value: reading.number * factor, dims: dims, counts: kept, bareBytes: reading.bareBytes, perScale: reading.perScale,
      bytesAlone: alone, moneyBytes: money, number: reading.number,
      bare: none && !reading.scaled && !reading.ratio, scaled: none && reading.scaled
    };
  }

  function key(dims) { return dims.map(function (d) { return String(d); }).join(","); }

  function phrase(dims, counts) {
    if (Object.keys(counts).length && !dims.some(function (d) { return d; })) return "a number of " + countsText(counts);
    var per = Object.keys(counts).sort().filter(function (c) { return counts[c] === -1; });
    return dimsPhrase(dims) + per.map(function (c) { return " per " + c; }).join("");
  }

  function dimsPhrase(dims) {
    var k = key(dims);
    if (own(TABLE.phrases, k)) return TABLE.phrases[k];
    var above = [], below = [];
    for (var i = 0; i < dims.length; i++) {
      var d = dims[i];
      if (!d) continue;
      var word = TABLE.words[i][d > 0 ? 0 : 1], p = Math.abs(d);
      word += p === 1 ? "" : "^" + key([p]);
      (d > 0 ? above : below).push(word);
    }
    return "a quantity in " + [above.join(" × ") || "1"].concat(below).join(" per ");
  }

  function countsText(counts) {
    var names = Object.keys(counts).sort(function (a, b) {
      return counts[b] - counts[a] || (a < b ? -1 : a > b ? 1 : 0);
    });
    return names.map(function (c) {
      var p = Math.abs(counts[c]), mark = p === 1 ? "" : "^" + key([p]);
      return (counts[c] < 0 ? "per " + c : c + "s") + mark;
    }).join(" ");
  }

  function within(x, centres, spec) {
    var low = Math.min.apply(null, centres), high = Math.max.apply(null, centres);
    var t = spec.tolerance;
    if (spec.mode === "factor") { low = low / t; high = high * t; }
    else { low = low * (1 - t); high = high * (1 + t); }
    return low * (1 - SLACK) <= x && x <= high * (1 + SLACK);
  }

  function same(a, b) {
    for (var i = 0; i < a.length; i++) if (!(Math.abs(a[i] - b[i]) <= 1e-9)) return false;
    return true;
  }

  function sameCounts(a, b) {
    var keys = Object.keys(a).concat(Object.keys(b));
    for (var i = 0; i < keys.length; i++) if ((a[keys[i]] || 0) !== (b[keys[i]] || 0)) return false;
    return true;
  }

  function bareValue(got, spec) {
    var x = got.value;
    if (got.scaled) return x;
    var named = x * spec.bare, v = spec.value;
    var count = !spec.dims.slice(0, TOKEN).some(function (d) { return d; });
    if (!count || !(x > 0 && named > 0) || spec.bare === 1) return named;
    return Math.max(named / v, v / named) <= Math.max(x / v, v / x) ? named : x;
  }

  function unlabelled(text, labels) {
    if (typeof text !== "string" || Array.from(text).length > MAX_CHARS) return null;
    var t = strip(text), changed = false;
    for (var n = 0; n < MAX_LABELS; n++) {
      var m = LABEL.exec(t);
      if (m && !PLAIN_NUMBER.test(m[1].replace(/^ +| +$/g, "").split(" ").pop())) {
        t = t.slice(m[0].length); changed = true;
        continue;
      }
      var rest = t, named = false, word;
      while ((word = LABEL_WORD.exec(rest)) !== null) {
        var w = word[1].toLowerCase().replace(/^[()]+|[()]+$/g, "");
        if (labels.indexOf(w) >= 0) named = true;
        else if (LABEL_FILLERS.indexOf(w) < 0) break;
        rest = rest.slice(word[0].length);
      }
      if (!named) break;
      t = rest; changed = true;
    }
    return changed ? t : null;
  }

  function isCount(spec) {
    var dims = spec.dims, counts = spec.counts || {}, i, total = 0;
    for (i = 0; i < TOKEN; i++) if (dims[i]) return false;
    for (i = TOKEN; i < dims.length; i++) {
      if (dims[i] !== 0 && dims[i] !== 1) return false;
      total += dims[i];
    }
    var names = Object.keys(counts);
    for (i = 0; i < names.length; i++) if (counts[names[i]] !== 1) return false;
    return total + names.length <= 1;
  }

  function isMemory(spec) {
    /* an amount of memory: data, with no time, compute or cost in it (book/checker.py's _is_memory) */
    var d = spec.dims;
    return !!d[DATA] && !(d[TIME] || d[COMPUTE] || d[CURRENCY]);
  }

  function isMoney(spec) {
    if (Object.keys(spec.counts || {}).length) return false;
    for (var k = 0; k < spec.dims.length; k++) if (spec.dims[k] !== (k === CURRENCY ? 1 : 0)) return false;
    return true;
  }

  function pure(spec) {
    return !spec.dims.some(function (d) { return d; }) && !Object.keys(spec.counts || {}).length;
  }

  function isSequences(got) {
    for (var k = 0; k < got.dims.length; k++) if (got.dims[k] !== (k === SEQUENCE ? 1 : 0)) return false;
    return true;
  }

  function perUnsaid(got, want, k) {
    if (want[k] !== -1 || got[k] !== 0) return false;
    for (var i = 0; i < want.length; i++) if (i !== k && !(Math.abs(got[i] - want[i]) <= 1e-9)) return false;
    return true;
  }


  function nearest(mistakes, value, spec) {
    var best = null, gap = Infinity;
    for (var i = 0; i < mistakes.length; i++) {
      var m = mistakes[i];
      if (within(value, [m.value], spec)) {
        var ratio = value === m.value ? 1 : Math.max(value / m.value, m.value / value); /* a mistake of 0, typed as 0 */
        if (ratio < gap) { best = m; gap = ratio; }
      }
    }
    return best;
  }

  function close(value, centres, spec) {
    /* "18" for 17.53 graded to 2%: right working rounded too coarsely (book/checker.py's _close) */
    var t = spec.tolerance, wider = Math.min(TABLE.close[0] * t, TABLE.close[1]);
    if (spec.mode !== "relative" || !(wider > t)) return null;
    if (!within(value, centres, { tolerance: wider, mode: "relative" })) return null;
    var words = TABLE.figures, n = 0;
    while (n < words.length - 1 && t * Math.pow(10, n + 2) < 10 * (1 - SLACK)) n++;
    var percent = (t * 100).toFixed(2).replace(/0+$/, "").replace(/\.$/, "");
    return "Close, but outside the \u00b1" + percent + "% this is graded to: carry more figures (" + words[n] + " significant figures).";
  }

  function verdict(kind, message) { return { ok: kind === "right", kind: kind, message: message }; }

  function unitText(spec) {
    return spec.said ? " (in " + spec.said + ")" : "";
  }

  function check(text, spec) {
    var got;
    try {
      got = measure(text);
    } catch (err) {
      if (!(err instanceof Fail)) throw err;
      var rest = unlabelled(text, spec.labels || []);
      try {
        if (rest === null) throw err;
        got = measure(rest); text = rest; /* "flash 0.0446": the option, then the answer */
      } catch (why) {
        if (!(why instanceof Fail)) throw why;
        return verdict("unreadable", why.message.charAt(0).toUpperCase() + why.message.slice(1) + ".");
      }
    }
    var centres = [spec.value].concat(spec.shown !== undefined ? [spec.shown] : []);
    var billions = got.number * TABLE.scales.B;
    if (got.bytesAlone && (isCount(spec) || isMoney(spec)) && (!pure(spec) || within(billions, centres, spec))) {
      /* "178 B" for a count: billions of it, as "178 B parameters" says; "7.3B" for a cost,
       * billions of dollars, as money is written (bytes otherwise); a pure number takes
       * billions only when they are right: "2667 B" is bytes, a dimension to name */
      got.value = billions; got.scaled = true;
    }
    if (got.moneyBytes && isMoney(spec)) {
      /* "$7.3B", "$7.3 B": billions of dollars (B before USD already is: "7.3B USD") */
      got.value = got.value / TABLE.units.B[0] * TABLE.scales.B;
      got.dims = spec.dims.slice();
    }
    if (spec.bare !== undefined && (got.bare || got.scaled)) {
      /* the statement names the answer's unit: "239" is 239 of it; "2.16T", 2.16 trillion of its base unit */
      got.value = bareValue(got, spec);
      got.dims = spec.dims.slice();
      got.counts = Object.assign({}, spec.counts || {});
    }
    var value = got.value, i, m;
    if (!(value >= 0 && isFinite(value))) return verdict("unreadable", "Give a positive number.");
    var mistakes = spec.mistakes || [];
    if (!same(got.dims, spec.dims)) {
      m = nearest(mistakes.filter(function (x) { return x.dims && same(got.dims, x.dims); }), value, spec);
      if (m) return verdict("wrong", m.why);
      /* "86 tokens/s" for each sequence: per sequence */
      if (perUnsaid(got.dims, spec.dims, SEQUENCE) && !Object.keys(got.counts).length) got.dims = spec.dims.slice();
      if (got.perScale && perUnsaid(got.dims, spec.dims, TOKEN)) got.dims = spec.dims.slice(); /* "$0.60/M": per million tokens */
      if (pure(spec) && isSequences(got) && !Object.keys(got.counts).length) got.dims = spec.dims.slice(); /* "9 users" for a count */
    }
    if (!same(got.dims, spec.dims)) {
      if (got.bareBytes && !spec.dims[TIME] && !spec.dims[DATA] && spec.said) {
        /* B may scale the question's unit ("3 B FLOP"): say how to write billions of it */
        return verdict("wrong", "B alone means bytes: for billions, name the unit after the B (B " + spec.said + ") or write billion.");
      }
      var want = phrase(spec.dims, spec.counts || {});
      var shown = want.indexOf(spec.said || "") >= 0 || !spec.dims.some(function (d) { return d; }) ? "" : unitText(spec);
      return verdict("wrong", "That is " + phrase(got.dims, got.counts) + "; the question asks for " + want + shown + ".");
    }
    var wanted = spec.counts || {};
    if (Object.keys(wanted).length && Object.keys(got.counts).length && !sameCounts(got.counts, wanted)) {
      return verdict("wrong", "That counts " + countsText(got.counts) + "; the question asks for " +
        countsText(wanted) + unitText(spec) + ".");
    }
    if (within(value, centres, spec)) return verdict("right", "Correct.");
    m = nearest(mistakes.filter(function (x) { return !x.dims; }), value, spec);
    if (m) return verdict("wrong", m.why);
    if (value === 0) return verdict("wrong", "Zero is not the answer: check your working."); /* "0": graded, not refused */
    var bare = typeof text === "string" ? BARE_NUMBER.exec(text) : null;
    var share = !spec.dims.some(function (d) { return d; }) && !Object.keys(spec.counts || {}).length && spec.value < 1;
    if (bare && share && spec.mode !== "factor" && within(value / 100, centres, spec)) {
      return verdict("wrong", "That is 100 times the answer, a share: did you mean " + bare[1] + "%?");
    }
    for (i = 0; i < TABLE.tens.length; i++) {
      var ten = TABLE.tens[i][0], said = TABLE.tens[i][1];
      var why = (i + 1) % 3 === 0 ? "a unit prefix slipped (k, M, G step by 1,000)" : "check your powers of ten";
      if (within(value / ten, centres, spec)) return verdict("wrong", "That is " + said + " times too large: " + why + ".");
      if (within(value * ten, centres, spec)) return verdict("wrong", "That is " + said + " times too small: " + why + ".");
    }
    var slips = spec.dims[0] && spec.mode !== "factor" ? TABLE.timeslips : [];
    for (i = 0; i < slips.length; i++) {
      var slip = "a time unit slipped, " + slips[i][2] + ".";
      if (within(value / slips[i][0], centres, spec)) return verdict("wrong", "That is " + slips[i][1] + " times the answer: " + slip);
      if (within(value * slips[i][0], centres, spec)) return verdict("wrong", "That is " + slips[i][1] + " times too small: " + slip);
    }
    var factors = spec.mode !== "factor" ? TABLE.factors : [];
    var said = isMemory(spec) ? 3 : 1; /* an amount of memory: bytes and copies, never FLOPs */
    for (i = 0; i < factors.length; i++) {
      if (within(value / factors[i][0], centres, spec)) return verdict("wrong", factors[i][said]);
      if (within(value * factors[i][0], centres, spec)) return verdict("wrong", factors[i][said + 1]);
    }
    var near = close(value, centres, spec);
    if (near !== null) return verdict("wrong", near);
    return verdict("wrong", "Not right, and not off by a simple factor: check your working.");
  }

  var api = { setUnits: setUnits, check: check };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  root.chalkboardAnswers = api;

  if (typeof document !== "undefined") {
    document.addEventListener("click", function (event) {
      var button = event.target.closest && event.target.closest(".chalkboard-check");
      if (!button) return;
      var box = button.closest(".chalkboard-problem");
      if (!TABLE && root.CHALKBOARD_UNITS) setUnits(root.CHALKBOARD_UNITS);
      var answer = JSON.parse(box.getAttribute("data-answer"));
      var result = check(box.querySelector("input").value, answer);
      var out = box.querySelector(".chalkboard-result");
      out.textContent = result.message;
      out.className = "chalkboard-result " + (result.ok ? "right" : "wrong");
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && event.target.closest && event.target.closest(".chalkboard-problem input")) {
        event.target.closest(".chalkboard-problem").querySelector(".chalkboard-check").click();
      }
    });
  }
})(typeof window !== "undefined" ? window : globalThis);
