"""The Study page in a real headless Chromium, over http and opened from the file system: keys
reveal and grade, the buttons preview the intervals they give, progress survives a reload,
undo, the daily new-card limit, the chapter filter, and export and import of progress (a bad file
changes nothing). One page per way of opening the site, reloaded a few times: each load costs
Chromium seconds. Fixtures are in conftest.py; the script's pure parts are tested under Node in
test_study.py.
"""

import json
import re
import time

import pytest

from tests.book.browser import ARTIFACTS

STATE = "() => JSON.parse(localStorage.getItem('chalkboard-study') || '{}')"
LOG = "() => JSON.parse(localStorage.getItem('chalkboard-study-log') || '[]')"
CURRENT = "() => document.querySelector('.chalkboard-study-card:not([hidden])')?.dataset"


def deck(site) -> list[dict]:
    return json.loads((site / "exports" / "flashcards.json").read_text(encoding="utf-8"))


@pytest.fixture(params=["http", "file"])
def study_url(request, server):
    base, site = server
    if request.param == "http":
        return f"{base}/study/", site
    return (site / "study" / "index.html").as_uri(), site


def status(page) -> str:
    return page.locator("#study-status").inner_text()


def load(page, url):
    page.goto(url)
    page.wait_for_selector("#chalkboard-study[data-ready]")


def test_study_page_reviews_by_keys_remembers_undoes_limits_filters(study_url, page, tmp_path):
    import genanki

    url, site = study_url
    cards = deck(site)
    if url.startswith("http"):
        follow_instant_navigation(page, url.removesuffix("/study/"))
    load(page, url)
    guids = page.eval_on_selector_all(
        ".chalkboard-study-card", "els => els.map(e => e.dataset.guid)"
    )
    assert guids == [genanki.guid_for("chalkboard", c["id"]) for c in cards]  # the Anki GUIDs
    assert status(page) == f"0 due, 20 new ({len(cards)} not seen yet)"  # Anki's 20 a day
    page.fill("#study-new-per-day", "2")
    page.locator("#study-new-per-day").dispatch_event("change")
    assert status(page) == f"0 due, 2 new ({len(cards)} not seen yet)"

    # space shows the answer; the buttons say what each grade gives a new card: FSRS's default
    # learning steps are 1 and 10 minutes (Hard: their mean), Easy graduates it at once
    first = page.evaluate(CURRENT)["guid"]
    back = page.locator(".chalkboard-study-card:not([hidden]) .study-back")
    assert not back.is_visible() and not page.locator("#study-rate").is_visible()
    page.keyboard.press("Space")
    assert back.is_visible()
    intervals = page.eval_on_selector_all(
        "#study-rate .study-interval", "els => els.map(e => e.textContent)"
    )
    assert intervals[:3] == ["1 min", "6 min", "10 min"] and intervals[3].endswith("days")
    page.keyboard.press("3")  # Good
    assert page.evaluate(CURRENT)["guid"] != first
    state, log = page.evaluate(STATE), page.evaluate(LOG)
    assert list(state) == [first] and [(e["guid"], e["rating"], e["new"]) for e in log] == [
        (first, 3, True)
    ]
    due_in = "([d, r]) => Date.parse(d) - Date.parse(r)"
    assert page.evaluate(due_in, [state[first]["due"], log[0]["review"]]) == 10 * 60_000

    # the second new card, graded Again, is the day's last new one: it comes back early
    second = page.evaluate(CURRENT)["guid"]
    page.keyboard.press("Space")
    page.keyboard.press("1")
    assert status(page) == f"0 due, 0 new ({len(cards) - 2} not seen yet)"
    assert page.evaluate(CURRENT)["guid"] == second
    assert "shown early" in page.locator("#study-card-info").inner_text()

    # undo: the card is new again, and the day has one new card left
    assert page.locator("#study-undo").is_enabled()
    page.keyboard.press("u")
    assert page.evaluate(CURRENT)["guid"] == second
    assert set(page.evaluate(STATE)) == {first} and len(page.evaluate(LOG)) == 1
    assert status(page) == f"0 due, 1 new ({len(cards) - 1} not seen yet)"
    assert page.locator("#study-undo").is_enabled()  # the first grade could be undone next

    # a reload remembers the grade and the limit
    page.reload()
    page.wait_for_selector("#chalkboard-study[data-ready]")
    assert page.locator("#study-new-per-day").input_value() == "2"
    assert status(page) == f"0 due, 1 new ({len(cards) - 1} not seen yet)"
    assert page.evaluate(CURRENT)["guid"] == second

    # a card fallen due comes before new ones, and grading it moves it forward
    page.evaluate(
        """g => { const s = JSON.parse(localStorage.getItem('chalkboard-study'));
                  s[g].due = new Date(Date.now() - 86400000).toISOString();
                  localStorage.setItem('chalkboard-study', JSON.stringify(s)); }""",
        first,
    )
    page.reload()
    page.wait_for_selector("#chalkboard-study[data-ready]")
    assert status(page).startswith("1 due, 1 new")
    assert page.evaluate(CURRENT)["guid"] == first
    page.click("#study-reveal")  # the mouse works as well as the keys
    page.click('#study-rate button[data-rating="Good"]')
    due = page.evaluate(STATE)[first]["due"]
    assert page.evaluate("d => Date.parse(d)", due) / 1000 > time.time()

    # the chapter filter, remembered too
    page.select_option("#study-chapter", "reversible")
    in_chapter = sum(c["chapter"] == "reversible" for c in cards)
    assert page.evaluate(CURRENT)["chapter"] == "reversible"
    assert status(page) == f"0 due, 1 new ({in_chapter} not seen yet in this chapter)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.keyboard.press("Space")
    page.screenshot(path=str(ARTIFACTS / f"study_{url.split(':')[0]}.png"), full_page=False)

    # export, then a bad file changes nothing, then the export imports into a fresh browser
    with page.expect_download() as download:
        page.click("#study-export")
    exported = tmp_path / download.value.suggested_filename
    download.value.save_as(exported)
    data = json.loads(exported.read_text(encoding="utf-8"))
    assert data["format"] == "chalkboard-study-progress" and data["newPerDay"] == 2
    assert data["cards"] == page.evaluate(STATE) and data["log"] == page.evaluate(LOG)
    before = page.evaluate("() => JSON.stringify(localStorage)")
    page.set_input_files(
        "#study-import-file",
        files=[{"name": "notes.json", "mimeType": "application/json", "buffer": b"{not json"}],
    )
    message = page.locator("#study-message")
    message.filter(has_text="Nothing was changed").wait_for()
    assert message.inner_text().startswith("notes.json: This file is not JSON")
    assert page.evaluate("() => JSON.stringify(localStorage)") == before
    page.evaluate("() => localStorage.clear()")
    page.reload()
    page.wait_for_selector("#chalkboard-study[data-ready]")
    assert status(page) == f"0 due, 20 new ({len(cards)} not seen yet)"
    page.set_input_files("#study-import-file", files=[str(exported)])
    message.filter(has_text="Imported").wait_for()
    assert page.evaluate(STATE) == data["cards"] and page.evaluate(LOG) == data["log"]
    assert status(page) == f"0 due, 1 new ({len(cards) - 1} not seen yet)"

    if url.startswith("http"):  # Material's instant navigation away and back: one start each
        # it takes over a link only once its sitemap is fetched: a click before is a page load
        page.wait_for_load_state("networkidle")
        page.evaluate("() => { window.stayed = true; }")
        page.click("nav.md-nav--primary a[href$='/chapters/batching/']")
        page.wait_for_function("() => document.querySelector('.chalkboard-calc[data-ready]')")
        page.click("nav.md-nav--primary a[href$='/study/']")
        page.wait_for_selector("#chalkboard-study[data-ready]")
        assert page.evaluate("() => window.stayed")  # the same window: no page load
        page.keyboard.press("Space")
        page.keyboard.press("3")
        assert len(page.evaluate(LOG)) == len(data["log"]) + 1  # graded once, not twice
    assert page.errors == []


def follow_instant_navigation(page, base):
    """Material navigates instantly only to the pages its sitemap lists, on the port of the
    sitemap's addresses (mkdocs.yml's site_url; `make serve`'s by default): the test server's
    sitemap names the test server instead."""

    def sitemap(route):
        sent = route.fetch()
        text = sent.text()
        home = re.search(r"<loc>([^<]*)</loc>", text).group(1)  # the first page: the home page
        route.fulfill(response=sent, body=text.replace(home, base + "/"))

    page.route("**/sitemap.xml", sitemap)
