/* The Study page: the flashcard deck scheduled by FSRS (ts-fsrs, vendored as the global FSRS).
 *
 * Progress lives in this browser's localStorage, under three keys: "chalkboard-study" holds
 * {card GUID: FSRS card} (the GUIDs are the Anki notes', so progress survives a rebuilt deck),
 * "chalkboard-study-log" the reviews ({guid, rating, review, new}; today's new ones count
 * against the daily limit) and "chalkboard-study-settings" the daily limit and the chapter.
 * Due cards come first, oldest first, then today's new cards in deck order; a learning card due
 * within 20 minutes comes early when nothing else is left (Anki's "learn ahead").
 *
 * Progress goes to and from a JSON file (see `readProgress`: a bad file changes nothing). The
 * pure parts (reading a progress file, merging, interval text) also run under Node, for tests. */
(function (root) {
  "use strict";
  var KEY = "chalkboard-study";
  var LOG = "chalkboard-study-log";
  var SETTINGS = "chalkboard-study-settings";
  var FORMAT = "chalkboard-study-progress";
  var VERSION = 1;
  var NEW_PER_DAY = 20; /* Anki's default */
  var LEARN_AHEAD_MS = 20 * 60 * 1000; /* Anki's default */
  var RATINGS = ["Again", "Hard", "Good", "Easy"]; /* FSRS.Rating 1..4 */

  /* -- pure parts: interval text, reading and merging progress files -------------------------- */

  /* "<1 min", "10 min", "3 h", "1 day", "12 days", "2.5 mo", "1.2 yr": how Anki labels its
   * buttons, a little more spelled out. */
  function spanText(ms) {
    var minutes = ms / 60000;
    if (minutes < 1) return "<1 min";
    if (minutes < 59.5) return Math.round(minutes) + " min";
    var hours = minutes / 60;
    if (hours < 23.5) return Math.round(hours) + " h";
    var days = hours / 24;
    if (days < 30.5) return Math.round(days) + (Math.round(days) === 1 ? " day" : " days");
    if (days < 365) return trim(days / 30.4375) + " mo";
    return trim(days / 365.25) + " yr";
  }
  function trim(x) { return String(Math.round(x * 10) / 10); }

  function isObject(x) { return x !== null && typeof x === "object" && !Array.isArray(x); }
  function isDate(x) { return typeof x === "string" && !isNaN(Date.parse(x)); }
  function isCount(x) { return typeof x === "number" && Math.floor(x) === x && x >= 0; }
  function isAmount(x) { return typeof x === "number" && isFinite(x) && x >= 0; }

  var CARD_FIELDS = [ /* an FSRS card as ts-fsrs 5 stores it */
    ["due", isDate, "a date"],
    ["stability", isAmount, "a number >= 0"],
    ["difficulty", isAmount, "a number >= 0"],
    ["elapsed_days", isAmount, "a number >= 0"],
    ["scheduled_days", isAmount, "a number >= 0"],
    ["reps", isCount, "a whole number >= 0"],
    ["lapses", isCount, "a whole number >= 0"],
    ["state", function (x) { return x === 0 || x === 1 || x === 2 || x === 3; }, "0, 1, 2 or 3"]
  ];

  function cardProblem(card) {
    if (!isObject(card)) return "is not an object";
    for (var i = 0; i < CARD_FIELDS.length; i++) {
      var f = CARD_FIELDS[i];
      if (!f[1](card[f[0]])) {
        return "has " + f[0] + " = " + JSON.stringify(card[f[0]]) + "; expected " + f[2];
      }
    }
    if ("learning_steps" in card && !isCount(card.learning_steps)) {
      return "has learning_steps = " + JSON.stringify(card.learning_steps) +
        "; expected a whole number >= 0";
    }
    if (card.last_review !== undefined && !isDate(card.last_review)) {
      return "has last_review = " + JSON.stringify(card.last_review) + "; expected a date";
    }
    return null;
  }

  function entryProblem(e) {
    if (!isObject(e)) return "is not an object";
    if (typeof e.guid !== "string" || !e.guid) return "has no card id (guid)";
    if ([1, 2, 3, 4].indexOf(e.rating) < 0) return "has rating " + JSON.stringify(e.rating) + "; expected 1 to 4";
    if (!isDate(e.review)) return "has review = " + JSON.stringify(e.review) + "; expected a date";
    if (typeof e["new"] !== "boolean") return "does not say whether the card was new";
    return null;
  }

  /* A progress file's text -> {progress: {cards, log, newPerDay}} or {error: one sentence}. */
  function readProgress(text) {
    var data;
    try { data = JSON.parse(text); } catch (e) {
      return { error: "This file is not JSON (" + e.message + ")." };
    }
    if (!isObject(data) || data.format !== FORMAT) {
      return { error: "This is not a Chalkboard progress file: it has no \"format\": \"" + FORMAT +
        "\" field. Export one from this page to see the shape." };
    }
    if (data.version !== VERSION) {
      return { error: "This progress file has version " + JSON.stringify(data.version) +
        "; this page reads version " + VERSION + "." };
    }
    if (!isObject(data.cards)) return { error: "This progress file has no \"cards\" object." };
    var guids = Object.keys(data.cards);
    for (var i = 0; i < guids.length; i++) {
      var problem = cardProblem(data.cards[guids[i]]);
      if (problem) return { error: "Card " + guids[i] + " in this file " + problem + "." };
    }
    var log = data.log === undefined ? [] : data.log;
    if (!Array.isArray(log)) return { error: "This progress file's \"log\" is not a list." };
    for (var j = 0; j < log.length; j++) {
      var bad = entryProblem(log[j]);
      if (bad) return { error: "Review " + (j + 1) + " in this file's log " + bad + "." };
    }
    var perDay = data.newPerDay === undefined ? null : data.newPerDay;
    if (perDay !== null && !(isCount(perDay) && perDay <= 9999)) {
      return { error: "This progress file's newPerDay is " + JSON.stringify(perDay) +
        "; expected a whole number from 0 to 9999." };
    }
    return { progress: { cards: data.cards, log: log, newPerDay: perDay } };
  }

  function reviewed(card) { return card && card.last_review ? Date.parse(card.last_review) : 0; }

  /* Here's progress and a file's -> the union: per card, the one reviewed last wins (a tie keeps
   * this browser's); the logs are joined without repeats, in time order. */
  function mergeProgress(mine, theirs) {
    var cards = {}, taken = 0, kept = 0;
    Object.keys(mine.cards).forEach(function (g) { cards[g] = mine.cards[g]; });
    Object.keys(theirs.cards).forEach(function (g) {
      if (!cards[g] || reviewed(theirs.cards[g]) > reviewed(cards[g])) {
        cards[g] = theirs.cards[g];
        taken++;
      } else kept++;
    });
    var seen = {}, log = [];
    mine.log.concat(theirs.log).forEach(function (e) {
      var id = e.guid + "@" + Date.parse(e.review);
      if (!seen[id]) { seen[id] = true; log.push(e); }
    });
    log.sort(function (a, b) { return Date.parse(a.review) - Date.parse(b.review); });
    return { cards: cards, log: log, taken: taken, kept: kept };
  }

  var api = { spanText: spanText, readProgress: readProgress, mergeProgress: mergeProgress };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  root.chalkboardStudy = api;
  if (typeof document === "undefined") return;

  /* -- storage --------------------------------------------------------------------------------- */

  function read(key, fallback) {
    try {
      var value = JSON.parse(localStorage.getItem(key));
      return value === null || value === undefined ? fallback : value;
    } catch (e) { return fallback; }
  }
  /* false when the browser refuses (storage off or full) */
  function write(key, value) {
    try { localStorage.setItem(key, JSON.stringify(value)); return true; } catch (e) { return false; }
  }
  function revive(card) {
    var out = {};
    Object.keys(card).forEach(function (k) { out[k] = card[k]; });
    out.due = new Date(card.due);
    if (card.last_review) out.last_review = new Date(card.last_review);
    return out;
  }
  function sameDay(a, b) { return a.toDateString() === b.toDateString(); }

  /* -- the page -------------------------------------------------------------------------------- */

  function init(doc) {
    var box = doc.querySelector("#chalkboard-study");
    if (!box || box.getAttribute("data-ready") || typeof FSRS === "undefined") return;
    box.setAttribute("data-ready", "yes");
    var scheduler = FSRS.fsrs(FSRS.generatorParameters({ enable_fuzz: false }));
    var cards = Array.prototype.slice.call(box.querySelectorAll(".chalkboard-study-card"));
    var $ = function (id) { return box.querySelector("#study-" + id); };
    var select = $("chapter"), perDay = $("new-per-day"), status = $("status");
    var reveal = $("reveal"), rate = $("rate"), undo = $("undo"), info = $("card-info");
    var message = $("message"), importer = $("import-file");
    var titles = {};
    Array.prototype.forEach.call(select.options, function (o) { titles[o.value] = o.textContent; });
    var current = null, revealed = false, undos = [], timer = null;

    var settings = read(SETTINGS, {});
    if (!isCount(settings.newPerDay)) settings.newPerDay = NEW_PER_DAY;
    if (settings.chapter && titles[settings.chapter]) select.value = settings.chapter;
    perDay.value = String(settings.newPerDay);

    function say(text, bad) {
      message.textContent = text;
      message.className = bad ? "study-message wrong" : "study-message";
    }
    function saved(ok) {
      if (!ok) say("This browser refuses to store your progress (storage is off or full): " +
        "export it before you leave the page.", true);
    }

    function newToday(log, now) {
      return log.filter(function (e) { return e["new"] && sameDay(new Date(e.review), now); }).length;
    }

    function queue(now) {
      var state = read(KEY, {});
      var due = [], fresh = [], ahead = [];
      cards.forEach(function (el) {
        if (select.value && el.getAttribute("data-chapter") !== select.value) return;
        var stored = state[el.getAttribute("data-guid")];
        if (!stored) { fresh.push(el); return; }
        var when = Date.parse(stored.due);
        if (when <= now) due.push({ el: el, due: when });
        else ahead.push({ el: el, due: when, learning: stored.state === 1 || stored.state === 3 });
      });
      var byDue = function (a, b) { return a.due - b.due; };
      due.sort(byDue);
      ahead.sort(byDue);
      var left = Math.max(0, settings.newPerDay - newToday(read(LOG, []), now));
      return {
        due: due.map(function (d) { return d.el; }),
        fresh: fresh.slice(0, left),
        unseen: fresh.length,
        left: left,
        soon: ahead.filter(function (a) { return a.learning && a.due - now <= LEARN_AHEAD_MS; })
          .map(function (a) { return a.el; }),
        next: ahead.length ? ahead[0].due : null
      };
    }

    function show(forced) {
      var now = new Date();
      var q = queue(now);
      clearTimeout(timer);
      cards.forEach(function (el) { el.hidden = true; });
      current = forced || q.due[0] || q.fresh[0] || q.soon[0] || null;
      revealed = false;
      status.textContent = q.due.length + " due, " + q.fresh.length + " new" +
        " (" + q.unseen + " not seen yet" + (select.value ? " in this chapter" : "") + ")";
      rate.hidden = true;
      reveal.hidden = !current;
      undo.disabled = !undos.length;
      info.textContent = "";
      if (!current) {
        var why = q.unseen && !q.left
          ? " Done for today: you have met today's " + settings.newPerDay + " new cards." +
            " Come back tomorrow, or raise the number of new cards a day."
          : " Nothing to review now.";
        if (q.next) {
          why += " The next card is due in " + spanText(q.next - now) + ".";
          if (q.next - now < 3600000) timer = setTimeout(show, q.next - now + 500);
        }
        status.textContent += "." + why;
        return;
      }
      var state = read(KEY, {})[current.getAttribute("data-guid")];
      var early = state && Date.parse(state.due) > now
        ? " (due in " + spanText(Date.parse(state.due) - now) + ", shown early)" : "";
      info.textContent = titles[current.getAttribute("data-chapter")] + " \u00b7 " +
        (!state ? "new card" : state.state === 2 ? "review" : "learning") + early;
      current.hidden = false;
      current.querySelector(".study-back").hidden = true;
    }

    function showAnswer() {
      if (!current || revealed) return;
      revealed = true;
      current.querySelector(".study-back").hidden = false;
      reveal.hidden = true;
      var now = new Date();
      var preview = scheduler.repeat(card(now), now);
      rate.querySelectorAll("button[data-rating]").forEach(function (button) {
        var next = preview[FSRS.Rating[button.getAttribute("data-rating")]].card;
        button.querySelector(".study-interval").textContent = spanText(next.due - now);
      });
      rate.hidden = false;
    }

    function card(now) {
      var saved = read(KEY, {})[current.getAttribute("data-guid")];
      return saved ? revive(saved) : FSRS.createEmptyCard(now);
    }

    function grade(name) {
      if (!current || !revealed) return;
      var now = new Date();
      var guid = current.getAttribute("data-guid");
      var state = read(KEY, {});
      var log = read(LOG, []);
      var next = scheduler.next(card(now), now, FSRS.Rating[name]);
      undos.push({ guid: guid, before: state[guid] || null, log: log.length });
      if (undos.length > 50) undos.shift();
      log.push({ guid: guid, rating: FSRS.Rating[name], review: now.toISOString(), "new": !state[guid] });
      state[guid] = next.card;
      saved(write(KEY, state) && write(LOG, log));
      say("");
      show();
    }

    function undoLast() {
      var last = undos.pop();
      if (!last) return;
      var state = read(KEY, {});
      var log = read(LOG, []);
      if (last.before) state[last.guid] = last.before;
      else delete state[last.guid];
      saved(write(KEY, state) && write(LOG, log.slice(0, last.log)));
      var el = cards.filter(function (c) { return c.getAttribute("data-guid") === last.guid; })[0];
      if (el && select.value && el.getAttribute("data-chapter") !== select.value) {
        select.value = settings.chapter = ""; /* back to all chapters, where the card is */
        write(SETTINGS, settings);
      }
      say("Undone: the card is back as it was before you graded it.");
      show(el);
    }

    function exportProgress() {
      var now = new Date();
      var data = {
        format: FORMAT, version: VERSION, exported: now.toISOString(),
        newPerDay: settings.newPerDay, cards: read(KEY, {}), log: read(LOG, [])
      };
      var blob = new Blob([JSON.stringify(data, null, 1) + "\n"], { type: "application/json" });
      var link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = "chalkboard-study-" + now.toISOString().slice(0, 10) + ".json";
      document.body.appendChild(link);
      link.click();
      link.remove();
      setTimeout(function () { URL.revokeObjectURL(link.href); }, 1000);
      say("Exported your progress on " + Object.keys(data.cards).length + " cards to " +
        link.download + ".");
    }

    function importProgress(file, text) {
      var read_ = readProgress(text);
      if (read_.error) { say(file.name + ": " + read_.error + " Nothing was changed.", true); return; }
      var theirs = read_.progress;
      var merged = mergeProgress({ cards: read(KEY, {}), log: read(LOG, []) }, theirs);
      if (theirs.newPerDay !== null) settings.newPerDay = theirs.newPerDay;
      saved(write(KEY, merged.cards) && write(LOG, merged.log) && write(SETTINGS, settings));
      perDay.value = String(settings.newPerDay);
      undos = [];
      say("Imported " + file.name + ": progress on " + merged.taken + " cards" +
        (merged.kept ? " (" + merged.kept + " cards reviewed more recently here kept theirs)" : "") +
        ".");
      show();
    }

    box.study = { reveal: showAnswer, grade: grade, undo: undoLast };
    reveal.addEventListener("click", showAnswer);
    rate.addEventListener("click", function (event) {
      var button = event.target.closest("button[data-rating]");
      if (button) grade(button.getAttribute("data-rating"));
    });
    undo.addEventListener("click", undoLast);
    select.addEventListener("change", function () {
      settings.chapter = select.value;
      write(SETTINGS, settings);
      select.blur(); /* so that the next space reveals, not reopens the list */
      show();
    });
    perDay.addEventListener("change", function () {
      var n = Number(perDay.value);
      if (perDay.value.trim() === "" || !isCount(n) || n > 9999) {
        say("New cards a day must be a whole number from 0 to 9999; it stays " +
          settings.newPerDay + ".", true);
        perDay.value = String(settings.newPerDay);
        return;
      }
      settings.newPerDay = n;
      write(SETTINGS, settings);
      perDay.blur();
      say("");
      show();
    });
    $("export").addEventListener("click", exportProgress);
    $("import").addEventListener("click", function () { importer.click(); });
    importer.addEventListener("change", function () {
      var file = importer.files[0];
      if (!file) return;
      importer.value = "";
      if (file.size > 20e6) { say(file.name + " is too large to be a progress file. Nothing was changed.", true); return; }
      var reader = new FileReader();
      reader.onload = function () { importProgress(file, String(reader.result)); };
      reader.onerror = function () { say(file.name + " could not be read. Nothing was changed.", true); };
      reader.readAsText(file);
    });
    show();
  }

  /* Keys, for the Study page whichever page is loaded (instant navigation swaps pages under one
   * listener): space or Enter shows the answer, then 1-4 grade (space or Enter: Good, as in
   * Anki); u or Ctrl+Z undoes. Keys typed into a field or on a focused button are theirs. */
  document.addEventListener("keydown", function (event) {
    var box = document.querySelector("#chalkboard-study[data-ready]");
    if (!box || !box.study || event.defaultPrevented) return;
    var target = event.target;
    if (target.closest && target.closest("input, select, textarea, button, a, summary, [contenteditable], .md-search")) return;
    var undoKey = event.key === "u" || ((event.ctrlKey || event.metaKey) && event.key === "z");
    if (!undoKey && (event.ctrlKey || event.metaKey || event.altKey)) return;
    var study = box.study, rate = box.querySelector("#study-rate");
    if (undoKey) study.undo();
    else if (event.key === " " || event.key === "Enter") {
      if (rate.hidden) study.reveal(); else study.grade("Good");
    } else if (/^[1-4]$/.test(event.key) && !rate.hidden) study.grade(RATINGS[Number(event.key) - 1]);
    else return;
    event.preventDefault();
  });

  /* Start once the page is there (from file:// too, where Material's document$ never fires),
   * and again on each page instant navigation brings in; init() skips a page it has seen. */
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document); });
  } else init(document);
  if (typeof document$ !== "undefined") document$.subscribe(function () { init(document); });
})(typeof window !== "undefined" ? window : globalThis);
