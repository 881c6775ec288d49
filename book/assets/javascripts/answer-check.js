/* Chalkboard's answer checker: a number with a unit ("24 ms", "0.024 s", "36 milliseconds",
 * "5,356 sequences", "2.6e14 tokens", "50%", "8x"), compared with the answer after conversion,
 * within a stated tolerance. A wrong dimension is named: tokens and sequences are dimensions of
 * their own, like time and bytes; the other counts (chips, parameters, layers), which are
 * dimensionless, are compared by name. Runs in the browser (no server)
 * and under Node for the tests. The unit table is generated from the project's pint registry. */
(function (root) {
  "use strict";
  var TABLE = null;
  /* the dimensions, in the order of the table's vectors (book/problems.py DIMENSIONS); the last
   * two are counts, said as "tokens" and "per sequence" */
  var NAMES = ["time", "information", "compute", "currency", "token", "sequence"];
  var FIRST_COUNT = 4;
  var N = NAMES.length;

  function zeros() { var out = []; for (var k = 0; k < N; k++) out.push(0); return out; }

  function setUnits(table) { TABLE = table; }

  function own(obj, key) { return Object.prototype.hasOwnProperty.call(obj, key); }

  /* a unit name -> [factor, dims, count name or null]: exact, else a prefix (short or long) */
  function lookup(name) {
    if (own(TABLE.units, name)) return TABLE.units[name];
    var prefixes = Object.keys(TABLE.prefixes).sort(function (a, b) { return b.length - a.length; });
    for (var i = 0; i < prefixes.length; i++) {
      var p = prefixes[i];
      var rest = name.slice(p.length);
      if (name.indexOf(p) === 0 && rest && own(TABLE.units, rest)) {
        var u = TABLE.units[rest];
        return [TABLE.prefixes[p] * u[0], u[1], u[2]];
      }
    }
    return null;
  }

  /* "TB/s", "USD/Mtok", "FLOP/byte", "B/val/tok", "ms", "milliseconds", "" ->
   * {factor, dims, counts: {token: -1}} or {error} */
  function parseUnit(text) {
    var factor = 1, dims = zeros(), counts = {};
    text = text.replace(/\u00b7/g, "*").replace(/\*\*/g, "^").replace(/\bper\b/g, "/").trim();
    if (!text) return { factor: 1, dims: dims, counts: counts };
    var parts = text.split("/");
    for (var i = 0; i < parts.length; i++) {
      var sign = i === 0 ? 1 : -1;
      var factors = parts[i].split(/[*\s]+/).filter(Boolean);
      if (!factors.length) return { error: "a unit is missing around '/'" };
      for (var j = 0; j < factors.length; j++) {
        var m = /^([A-Za-z\u00b5]+)(?:\^(-?\d+))?$/.exec(factors[j]);
        if (!m) return { error: "cannot read the unit '" + factors[j] + "'" };
        var u = lookup(m[1]);
        if (!u) return { error: "unknown unit '" + m[1] + "'" };
        var power = sign * (m[2] ? parseInt(m[2], 10) : 1);
        factor *= Math.pow(u[0], power);
        for (var k = 0; k < N; k++) dims[k] += power * u[1][k];
        if (u[2]) counts[u[2]] = (counts[u[2]] || 0) + power;
      }
    }
    for (var c in counts) if (own(counts, c) && !counts[c]) delete counts[c];
    return { factor: factor, dims: dims, counts: counts };
  }

  /* "that is time", "that counts chips", "that counts tokens per sequence" */
  function describe(dims, counts) {
    var out = [], all = {}, c;
    for (var k = 0; k < FIRST_COUNT; k++) {
      if (dims[k]) out.push(NAMES[k] + (dims[k] === 1 ? "" : "^" + dims[k]));
    }
    for (k = FIRST_COUNT; k < N; k++) if (dims[k]) all[NAMES[k]] = dims[k];
    for (c in counts || {}) if (own(counts, c)) all[c] = (all[c] || 0) + counts[c];
    if (Object.keys(all).length) {
      return (out.length ? "is " + out.join(" \u00b7 ") + " " : "counts ") + describeCounts(all);
    }
    return "is " + (out.length ? out.join(" \u00b7 ") : "a pure number");
  }

  function describeCounts(counts) {
    var names = Object.keys(counts).sort(function (a, b) { return counts[b] - counts[a] || (a < b ? -1 : 1); });
    if (!names.length) return "no count";
    return names.map(function (n) {
      var power = Math.abs(counts[n]);
      /* "tokens per sequence": a count below the line is said in the singular */
      return counts[n] < 0
        ? "per " + n + (power === 1 ? "" : "^" + power)
        : n + "s" + (power === 1 ? "" : "^" + power);
    }).join(" ");
  }

  function sameCounts(a, b) {
    var keys = Object.keys(a).concat(Object.keys(b));
    for (var i = 0; i < keys.length; i++) {
      if ((a[keys[i]] || 0) !== (b[keys[i]] || 0)) return false;
    }
    return true;
  }

  /* "5,356" -> "5356" (thousands separators); "36 milliseconds", "2.6e14 tokens", "50%", "8x" */
  var NUMBER = /^\s*([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*(.*)$/;

  /* answer: {value (base units), dims, counts, tolerance, mode: "relative" | "factor", unit} */
  function check(text, answer) {
    var m = NUMBER.exec(text || "");
    if (!m || !/\d/.test(m[1])) return { ok: false, message: "Give a number followed by a unit, like 24 ms." };
    var number = parseFloat(m[1].replace(/,/g, ""));
    var rest = m[2].trim();
    var unit;
    if (/^(%|percent)$/.test(rest)) {
      unit = { factor: 0.01, dims: zeros(), counts: {} };
    } else if (/^[x\u00d7]$/i.test(rest) || /^times$/.test(rest)) {
      unit = { factor: 1, dims: zeros(), counts: {} };
    } else {
      unit = parseUnit(rest);
    }
    if (unit.error) return { ok: false, message: unit.error + "." };
    for (var k = 0; k < N; k++) {
      if (Math.abs((unit.dims[k] || 0) - (answer.dims[k] || 0)) > 1e-9) {
        return {
          ok: false,
          message: "Wrong dimension: that " + describe(unit.dims, unit.counts) + ", the answer " +
            describe(answer.dims, answer.counts) + " (e.g. " + answer.unit + ")."
        };
      }
    }
    /* the other counts are dimensionless: compare their names when the answer names any */
    var expected = answer.counts;
    if (expected && Object.keys(unit.counts).length && !sameCounts(unit.counts, expected)) {
      return {
        ok: false,
        message: "Wrong unit: that counts " + describeCounts(unit.counts) + ", the answer counts " +
          describeCounts(expected) + " (e.g. " + answer.unit + ")."
      };
    }
    var value = number * unit.factor;
    if (!(value > 0) || !isFinite(value)) return { ok: false, message: "Give a positive number." };
    var ratio = value / answer.value;
    var ok = answer.mode === "factor"
      ? ratio <= answer.tolerance * (1 + 1e-12) && ratio >= 1 / answer.tolerance / (1 + 1e-12)
      : Math.abs(ratio - 1) <= answer.tolerance;
    return { ok: ok, message: ok ? "Correct." : "Not quite: check your working." };
  }

  var api = { setUnits: setUnits, parseUnit: parseUnit, check: check };
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
