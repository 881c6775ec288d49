"""The built site in a real headless Chromium: every page loads cleanly with typeset math and
working links, from the server and from file://, and search finds a word; screenshots of a few
pages are saved under build/test-artifacts. The calculators, answer checker and flashcards are in
test_browser_widgets.py; fixtures in conftest.py, helpers in browser.py.
"""

import re
import urllib.parse

from book.figures import CHAPTER_FIGURES
from tests.book.browser import ARTIFACTS, LOOK, RAW_TEX, all_pages, served

SCREENSHOTS = ["/chapters/batching/", "/chapters/validation/", "/claims/", "/problems/moe/"]


def test_every_page_loads_cleanly_with_math_rendered_and_no_broken_links(server, page):
    """Every page, with a screenshot of a few saved under build/test-artifacts on the way."""
    base, site = server
    pages = all_pages(site)
    assert len(pages) >= 30 and set(SCREENSHOTS) <= set(pages)
    links, shots = set(), []
    for path in pages:
        url = base + path.replace("//", "/")
        page.errors.clear()
        response = page.goto(url)  # returns once the page's load event fired
        assert response.status == 200, url
        page.wait_for_function(
            "document.querySelectorAll('.arithmatex').length === 0 || "
            "document.querySelectorAll('.katex').length > 0"
        )
        assert page.errors == [], (url, page.errors)
        look = page.evaluate(LOOK)
        assert look["raw"] == [] and look["katexErrors"] == 0, url
        if look["arithmatex"]:
            assert look["katex"] > 0, url
        chapter = re.fullmatch(r"/chapters/(\w+)/", path)
        if chapter:  # KaTeX's fonts loaded, and every figure the chapter draws is drawn
            assert look["widest"] > 0, url
            wanted = CHAPTER_FIGURES.get(chapter.group(1), ())
            assert set(wanted) <= set(look["figures"]), (url, look["figures"])
            assert all(look["figures"][f] > 50 for f in wanted), (url, look["figures"])
        for href in look["hrefs"]:
            if href.startswith(base):
                links.add(urllib.parse.urlsplit(href).path)
        if path in SCREENSHOTS:
            page.evaluate("document.fonts.ready.then(() => true)")
            shots.append(ARTIFACTS / (re.sub(r"\W+", "_", path).strip("_") + ".png"))
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shots[-1]), full_page=False)
    # every link into the site names a file the server would send (the site folder is what
    # it serves), checked on disk rather than over HTTP
    broken = sorted(link for link in links if not served(site, link))
    assert broken == []
    assert len(links) >= len(pages)  # the links were read
    assert [shot.stat().st_size > 10_000 for shot in shots] == [True] * len(SCREENSHOTS)


def test_a_broken_link_is_seen(server):
    _, site = server
    assert served(site, "/chapters/batching/") and served(site, "/chapters/batching")
    assert served(site, "/chalkboard.pdf") and served(site, "/katex/katex.min.css")
    assert not served(site, "/chapters/no-such-chapter/")
    assert not served(site, "/chapters/")  # a folder without index.html is no page


def test_search_finds_crossover(search_server, page):
    base, _ = search_server
    page.goto(base + "/")
    box, item = page.locator("input.md-search__input"), page.locator(".md-search-result__item")
    # Material reads the query on keyup, so type it key by key (fill() sends no keyup). The
    # search worker builds its index in the background; a query typed before it is ready can
    # go unanswered, so type it again until results appear (a minute at most).
    for _ in range(6):
        box.fill("")
        box.press_sequentially("crossover", delay=20)
        try:
            item.first.wait_for(timeout=10_000)
            break
        except Exception:  # playwright's TimeoutError: not ready yet
            continue
    meta = page.locator(".md-search-result__meta").inner_text()
    assert item.count() > 0, (
        f"no search results for 'crossover' in a minute ({meta!r}, {page.errors})"
    )
    assert "crossover" in page.locator(".md-search-result").inner_text().lower()


def test_the_raw_tex_probe_can_fail(page):
    page.set_content(r"<p>left as \(x^2\) by a broken build</p><p class='katex'>\(fine\)</p>")
    assert page.evaluate(RAW_TEX) == [r"left as \(x^2\) by a broken build"]


def test_a_chapter_opened_from_a_file_shows_typeset_math_and_every_figure(server, page):
    """Opened from file:// no script typesets anything: the math must arrive rendered (issue 12),
    with KaTeX's fonts and the figures found beside the page. One chapter stands for all: every
    chapter page has the same template and depth, and the every-page test checks each one's math
    and figures over HTTP."""
    _, site = server
    page.goto((site / "chapters" / "batching" / "index.html").as_uri())
    page.wait_for_load_state("load")
    look = page.evaluate(LOOK)
    assert look["raw"] == [] and look["katexErrors"] == 0
    assert look["katex"] > 0 and look["widest"] > 0  # a formula has a real width
    for fig_id in CHAPTER_FIGURES["batching"]:
        assert look["figures"].get(fig_id, 0) > 50, (fig_id, look["figures"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "batching_from_file.png"), full_page=False)
