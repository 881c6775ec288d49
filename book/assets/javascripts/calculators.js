/* Chalkboard's calculators: every input editable with its unit, presets to prefill them, and
 * the result recomputed as you type by the function sympy generated for the equation. */
(function () {
  "use strict";

  function format(x) {
    if (!isFinite(x)) return "\u2014";
    var text = Number(x).toPrecision(6);
    return text.indexOf("e") >= 0 ? text : String(parseFloat(text));
  }

  function selected(box, kind) {
    var s = box.querySelector('select[data-kind="' + kind + '"]');
    return s ? s.value : null;
  }

  /* The preset kind a picker lists: the weight, KV-cache and compute precision pickers all
   * list precisions. */
  function presetKind(box, picker) {
    var s = box.querySelector('select[data-kind="' + picker + '"]');
    return (s && s.getAttribute("data-preset")) || picker;
  }

  function prefill(box) {
    var data = window.CHALKBOARD_PRESET_VALUES || {};
    box.querySelectorAll("input[data-arg]").forEach(function (input) {
      var from = input.getAttribute("data-from");
      var name = input.getAttribute("data-arg");
      /* "hardware+compute_precision": the hardware's figure at the chosen compute precision */
      var parts = from.split("+");
      var picker = parts[0];
      var id = selected(box, picker);
      var table = data[presetKind(box, picker)];
      if (!id || !table || !table[id]) return;
      var key = parts.length > 1 ? name + ":" + selected(box, parts[1]) : name;
      var value = table[id][key];
      input.value = value === undefined ? "" : String(value);
      input.title = value === undefined ? "this preset has no such figure" : "";
    });
  }

  function compute(box) {
    var fn = (window.CHALKBOARD_FUNCTIONS || {})[box.getAttribute("data-eq")];
    var out = box.querySelector("output");
    if (!fn) return;
    var args = [], ok = true;
    box.querySelectorAll("input[data-arg]").forEach(function (input) {
      var v = parseFloat(input.value);
      if (!(v >= 0) || input.value.trim() === "") ok = false;
      args.push(v * parseFloat(input.getAttribute("data-factor")));
    });
    var result = ok ? fn.apply(null, args) / parseFloat(box.getAttribute("data-output-factor")) : NaN;
    out.setAttribute("data-value", ok ? String(result) : "");
    out.textContent = ok ? format(result) : "\u2014 (fill every input)";
  }

  function init(root) {
    root.querySelectorAll(".chalkboard-calc").forEach(function (box) {
      if (box.getAttribute("data-ready")) return;
      box.setAttribute("data-ready", "1");
      box.addEventListener("change", function (event) {
        if (event.target.matches("select")) { prefill(box); compute(box); }
      });
      box.addEventListener("input", function () { compute(box); });
      compute(box);
    });
  }

  /* Start once the page is there (from file:// too, where Material's document$ never fires),
   * and again on each page instant navigation brings in; init() skips a calculator it has seen. */
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document); });
  } else init(document);
  if (typeof document$ !== "undefined") document$.subscribe(function () { init(document); });
})();
