/* Chalkboard's answer checker: a number with a unit ("24 ms", "0.024 s", "2.4e-2 s"), compared
 * with the answer after conversion, within a stated tolerance. Runs in the browser (no server)
 * and under Node for the tests. The unit table is generated from the project's pint registry. */
(function (root) {
  "use strict";
  var TABLE = null;
  var NAMES = ["time", "information", "compute", "currency"];

  function setUnits(table) { TABLE = table; }

  function lookup(name) {
    if (Object.prototype.hasOwnProperty.call(TABLE.units, name)) return TABLE.units[name];
    var prefixes = Object.keys(TABLE.prefixes).sort(function (a, b) { return b.length - a.length; });
    for (var i = 0; i < prefixes.length; i++) {
      var p = prefixes[i];
      var rest = name.slice(p.length);
      if (name.indexOf(p) === 0 && rest && Object.prototype.hasOwnProperty.call(TABLE.units, rest)) {
        var u = TABLE.units[rest];
        return [TABLE.prefixes[p] * u[0], u[1]];
      }
    }
    return null;
  }

  /* "TB/s", "USD/Mtok", "FLOP/byte", "B/val/tok", "ms", "" -> [factor, dims] or an error */
  function parseUnit(text) {
    var factor = 1, dims = [0, 0, 0, 0];
    text = text.replace(/\u00b7/g, "*").replace(/\*\*/g, "^").trim();
    if (!text) return { factor: 1, dims: dims };
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
        for (var k = 0; k < 4; k++) dims[k] += power * u[1][k];
      }
    }
    return { factor: factor, dims: dims };
  }

  function describe(dims) {
    var out = [];
    for (var k = 0; k < 4; k++) {
      if (dims[k]) out.push(NAMES[k] + (dims[k] === 1 ? "" : "^" + dims[k]));
    }
    return out.length ? out.join(" \u00b7 ") : "a pure number";
  }

  /* answer: {value (base units), dims, tolerance, mode: "relative" | "factor", unit} */
  function check(text, answer) {
    var m = /^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*)$/.exec(text || "");
    if (!m) return { ok: false, message: "Give a number followed by a unit, like 24 ms." };
    var unit = parseUnit(m[2]);
    if (unit.error) return { ok: false, message: unit.error + "." };
    for (var k = 0; k < 4; k++) {
      if (Math.abs(unit.dims[k] - answer.dims[k]) > 1e-9) {
        return {
          ok: false,
          message: "Wrong dimension: that is " + describe(unit.dims) + ", the answer is " +
            describe(answer.dims) + " (e.g. " + answer.unit + ")."
        };
      }
    }
    var value = parseFloat(m[1]) * unit.factor;
    if (!(value > 0) || !isFinite(value)) return { ok: false, message: "Give a positive number." };
    var ratio = value / answer.value;
    var ok = answer.mode === "factor"
      ? ratio <= answer.tolerance && ratio >= 1 / answer.tolerance
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
