"""The Study page without a browser: its template puts a card's figure on the card's back, and its
script's pure parts (book/assets/javascripts/study.js) run under Node: the interval text on the
grade buttons, reading a progress file (a bad one is refused with one sentence; that it changes
nothing is the browser test's part) and merging a file's progress with a browser's. The page
itself is tested in Chromium (test_browser_study.py)."""

import functools
import json
import shutil
import subprocess
from pathlib import Path

NODE = shutil.which("node") or shutil.which("nodejs")
JS = Path(__file__).resolve().parents[2] / "book" / "assets" / "javascripts"

# Reads {"calls": [[function, args...], ...]} on stdin; prints the results in order. FSRS makes
# the real cards the files hold.
RUNNER = """
const study = require(process.argv[1]);
const FSRS = require(process.argv[2]);
const scheduler = FSRS.fsrs(FSRS.generatorParameters({ enable_fuzz: false }));
const api = Object.assign({}, study, {
  reviewedCard: (iso, rating) => {
    const now = new Date(iso);
    return scheduler.next(FSRS.createEmptyCard(now), now, rating).card;
  },
});
let text = "";
process.stdin.on("data", (d) => (text += d)).on("end", () => {
  const calls = JSON.parse(text).calls;
  console.log(JSON.stringify(calls.map(([name, ...args]) => api[name](...args))));
});
"""


def run(*calls):
    assert NODE, "Node.js is needed to test the Study page's script and was not found"
    out = subprocess.run(
        [NODE, "-e", RUNNER, str(JS / "study.js"), str(JS / "vendor" / "ts-fsrs.umd.js")],
        input=json.dumps({"calls": list(calls)}),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


MINUTE, HOUR, DAY = 60_000, 3_600_000, 86_400_000


def test_interval_text_reads_like_ankis_buttons():
    spans = [30_000, 10 * MINUTE, 3 * HOUR, DAY, 8 * DAY, 76 * DAY, 438 * DAY]
    assert run(*[["spanText", ms] for ms in spans]) == [
        "<1 min",
        "10 min",
        "3 h",
        "1 day",
        "8 days",
        "2.5 mo",  # 76 days / 30.44 days a month
        "1.2 yr",  # 438 / 365.25
    ]


@functools.cache
def cards() -> tuple:
    """Two real FSRS cards (rated Good on 1 March, Easy on 5 March), as JSON saves them."""
    return tuple(
        run(
            ["reviewedCard", "2025-03-01T10:00:00Z", 3],
            ["reviewedCard", "2025-03-05T10:00:00Z", 4],
        )
    )


def progress(**change) -> dict:
    good, easy = cards()
    data = {
        "format": "chalkboard-study-progress",
        "version": 1,
        "newPerDay": 15,
        "cards": {"guid-a": good, "guid-b": easy},
        "log": [
            {"guid": "guid-a", "rating": 3, "review": "2025-03-01T10:00:00.000Z", "new": True},
            {"guid": "guid-b", "rating": 4, "review": "2025-03-05T10:00:00.000Z", "new": True},
        ],
    }
    data.update(change)
    return data


def test_an_exported_file_reads_back_whole():
    data = progress()
    (read,) = run(["readProgress", json.dumps(data)])
    assert read == {"progress": {k: data[k] for k in ("cards", "log", "newPerDay")}}


def card_with(**change) -> dict:
    good, easy = cards()
    return {"guid-a": good, "guid-b": dict(easy, **change)}


BAD_FILES = [  # file text -> what its one-sentence error must say
    ("{not json", "not JSON"),
    (json.dumps([1, 2]), "not a Chalkboard progress file"),
    (json.dumps({"guid-a": {}}), "not a Chalkboard progress file"),  # localStorage's raw shape
    (json.dumps(progress(version=2)), "version 2; this page reads version 1"),
    (json.dumps(progress(cards=[])), 'no "cards" object'),
    (json.dumps(progress(cards=card_with(due="next week"))), "Card guid-b in this file has due"),
    (json.dumps(progress(cards=card_with(stability="high"))), "stability"),
    (json.dumps(progress(cards=card_with(reps=-1))), "reps = -1; expected a whole number"),
    (json.dumps(progress(cards=card_with(state=7))), "state = 7; expected 0, 1, 2 or 3"),
    (json.dumps(progress(cards=card_with(last_review=5))), "last_review = 5"),
    (json.dumps(progress(cards={"guid-a": "soon"})), "Card guid-a in this file is not an object"),
    (json.dumps(progress(log={})), '"log" is not a list'),
    (
        json.dumps(progress(log=[{"guid": "g", "rating": 5, "review": "2025-03-01", "new": 1}])),
        "Review 1 in this file's log has rating 5",
    ),
    (json.dumps(progress(newPerDay=-3)), "newPerDay is -3"),
    (json.dumps(progress(newPerDay=2.5)), "newPerDay is 2.5"),
]


def test_a_bad_file_is_refused_in_one_sentence():
    results = run(*[["readProgress", text] for text, _ in BAD_FILES])
    for (text, says), got in zip(BAD_FILES, results, strict=True):
        assert set(got) == {"error"}, (text, got)
        assert says in got["error"], (text, got["error"])
        assert got["error"].endswith("."), got["error"]


def test_merging_keeps_the_latest_review_of_each_card_and_every_review_once():
    good, easy = cards()
    later_good = run(["reviewedCard", "2025-03-09T10:00:00Z", 3])[0]
    mine = {
        "cards": {"guid-a": later_good, "guid-b": easy},
        "log": progress()["log"][1:]
        + [{"guid": "guid-a", "rating": 3, "review": "2025-03-09T10:00:00.000Z", "new": False}],
    }
    theirs = {"cards": {"guid-a": good, "guid-b": easy, "guid-c": good}, "log": progress()["log"]}
    (merged,) = run(["mergeProgress", mine, theirs])
    # guid-a: mine is newer (9 March); guid-b: a tie keeps mine; guid-c: only theirs
    assert merged["cards"] == {"guid-a": later_good, "guid-b": easy, "guid-c": good}
    assert (merged["taken"], merged["kept"]) == (1, 2)
    assert [e["review"][:10] for e in merged["log"]] == ["2025-03-01", "2025-03-05", "2025-03-09"]


def test_a_cards_figure_is_on_its_back_and_only_there():
    """A card may carry a figure (HTML, as the chapter pages' cards do): the page shows it with
    the answer, where it cannot give the answer away."""
    from html.parser import HTMLParser

    import markdown

    from book.templating import environment

    card = {"guid": "g", "chapter": "batching", "id": "c", "front": "Sketch *it*.", "back": "So."}
    figure = '<figure class="chalkboard-figure" id="figure-x">\n<svg></svg>\n</figure>'
    cards = [dict(card, figure=figure), dict(card, guid="h"), dict(card, guid="i", figure="")]
    text = environment().get_template("cards/study.md.j2").render(chapters=[], cards=cards)
    where, divs = [], []  # (tag, card, side) of each <figure> and <em>; the open <div>s

    class Walk(HTMLParser):
        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "div":
                divs.append(attrs.get("data-guid") or attrs.get("class"))
            elif tag in ("figure", "em"):
                where.append((tag, *divs[-2:]))  # the card, its side

        def handle_endtag(self, tag):
            if tag == "div":
                divs.pop()

    Walk().feed(markdown.markdown(text, extensions=["md_in_html", "attr_list"]))
    # the figure on g's back only; the fronts' Markdown is read (*it*)
    assert sorted(where) == [
        ("em", "g", "study-front"),
        ("em", "h", "study-front"),
        ("em", "i", "study-front"),
        ("figure", "g", "study-back"),
    ]
