/* The Study page: the flashcard deck scheduled by FSRS (ts-fsrs, vendored as the global FSRS).
 * Progress is kept in localStorage under one key, as {card GUID: FSRS card}, so it survives a
 * rebuilt deck; new cards come after the due ones, in deck order. */
(function () {
  "use strict";
  var KEY = "chalkboard-study";

  function load() {
    try { return JSON.parse(localStorage.getItem(KEY)) || {}; } catch (e) { return {}; }
  }
  function save(state) { localStorage.setItem(KEY, JSON.stringify(state)); }
  function revive(card) {
    card.due = new Date(card.due);
    if (card.last_review) card.last_review = new Date(card.last_review);
    return card;
  }

  function init(root) {
    var box = root.querySelector("#chalkboard-study");
    if (!box || box.getAttribute("data-ready") || typeof FSRS === "undefined") return;
    box.setAttribute("data-ready", "yes");
    var scheduler = FSRS.fsrs(FSRS.generatorParameters({ enable_fuzz: false }));
    var cards = Array.prototype.slice.call(box.querySelectorAll(".chalkboard-study-card"));
    var select = box.querySelector("#study-chapter");
    var status = box.querySelector("#study-status");
    var reveal = box.querySelector("#study-reveal");
    var rate = box.querySelector("#study-rate");
    var current = null;

    function queue(now) {
      var state = load();
      var due = [], fresh = [];
      cards.forEach(function (el) {
        if (select.value && el.getAttribute("data-chapter") !== select.value) return;
        var saved = state[el.getAttribute("data-guid")];
        if (!saved) fresh.push(el);
        else if (revive(saved).due <= now) due.push({ el: el, due: saved.due });
      });
      due.sort(function (a, b) { return a.due - b.due; });
      return { due: due.map(function (d) { return d.el; }), fresh: fresh };
    }

    function show() {
      var q = queue(new Date());
      cards.forEach(function (el) { el.hidden = true; });
      current = q.due[0] || q.fresh[0] || null;
      status.textContent = q.due.length + " due, " + q.fresh.length + " new";
      reveal.hidden = !current;
      rate.hidden = true;
      if (!current) {
        status.textContent += ": nothing to review now. Come back later, or pick another chapter.";
        return;
      }
      current.hidden = false;
      current.querySelector(".study-back").hidden = true;
    }

    reveal.addEventListener("click", function () {
      if (!current) return;
      current.querySelector(".study-back").hidden = false;
      reveal.hidden = true;
      rate.hidden = false;
    });
    rate.addEventListener("click", function (event) {
      var button = event.target.closest("button[data-rating]");
      if (!button || !current) return;
      var now = new Date();
      var state = load();
      var guid = current.getAttribute("data-guid");
      var card = state[guid] ? revive(state[guid]) : FSRS.createEmptyCard(now);
      var next = scheduler.next(card, now, FSRS.Rating[button.getAttribute("data-rating")]);
      state[guid] = next.card;
      save(state);
      show();
    });
    select.addEventListener("change", show);
    show();
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(function (doc) { init(doc.body || document.body); });
  } else if (typeof document !== "undefined") {
    document.addEventListener("DOMContentLoaded", function () { init(document.body); });
  }
})();
