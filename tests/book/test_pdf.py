"""The whole book as one PDF (book/pdf.py), printed by the system Chromium and read back:
its text with pypdfium2 (every page once per module, split into the top margin, the body and the
bottom margin), its structure (named destinations, outline, tags) with pypdf. Like
test_browser.py, it fails (never skips) when Chromium cannot be found."""

import re
from dataclasses import dataclass

import pytest
from pypdf import PdfReader

import derivations
from book.pdf import (
    MARGIN,
    PDF_NAME,
    PRINT_PAGE,
    _html_path,
    book_pages,
    running_header,
    start_pages,
    write_pdf,
)
from units import ChalkboardError


@pytest.fixture(scope="module")
def pdf(printed_site):
    return PdfReader(printed_site / PDF_NAME)


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@dataclass(frozen=True)
class Page:
    """One printed page's text, whitespace collapsed: the top margin (running header and the
    header template), the body, the bottom margin (the footer's "n / N")."""

    head: str
    body: str
    foot: str

    @property
    def text(self) -> str:
        return f"{self.head} {self.body} {self.foot}"


def read_pages(path) -> list[Page]:
    """Every page's text, read once with pypdfium2 (a second for the book; pypdf took a minute)."""
    import pypdfium2

    margin = float(MARGIN["top"].removesuffix("mm")) / 25.4 * 72  # mm -> PDF points
    assert MARGIN["bottom"] == MARGIN["top"]
    doc = pypdfium2.PdfDocument(path)
    try:
        found = []
        for i in range(len(doc)):
            page = doc[i]
            height = page.get_height()
            text = page.get_textpage()
            found.append(
                Page(
                    head=_flat(text.get_text_bounded(bottom=height - margin)),
                    body=_flat(text.get_text_bounded(bottom=margin, top=height - margin)),
                    foot=_flat(text.get_text_bounded(top=margin)),
                )
            )
            text.close()
            page.close()
        return found
    finally:
        doc.close()


@pytest.fixture(scope="module")
def pages(printed_site) -> list[Page]:
    return read_pages(printed_site / PDF_NAME)


@pytest.fixture(scope="module")
def text(pages):
    """The whole PDF's text, whitespace collapsed."""
    return " ".join(p.text for p in pages)


def test_pdf_is_written_without_leftovers(printed_site):
    assert (printed_site / PDF_NAME).stat().st_size > 0
    assert not list(printed_site.glob(f".{PDF_NAME}*"))  # no temporary file left behind


def test_page_count_is_sane(pdf, pages):
    sections = book_pages()
    assert len(pages) == len(pdf.pages)  # pypdfium2 and pypdf read the same book
    # each printed page starts on a new sheet after the title and the contents
    assert len(pages) >= len(sections) + 1
    assert len(pages) <= 40 * len(sections)


def test_text_holds_every_chapter_title_contents_and_page_numbers(pages, text):
    for chapter in derivations.CHAPTERS:
        assert _flat(chapter.title) in text, chapter.title
    assert "Contents" in pages[0].body + " " + pages[1].body
    n = len(pages)
    assert pages[-1].foot == f"{n} / {n}"  # the footer's page numbers
    assert "Chalkboard" in pages[-1].head  # the running header


def test_every_page_has_the_header_and_its_number_in_the_footer(pages):
    """The final print has Chromium's header and footer templates on every page (the passes
    that only measure where parts start print without them)."""
    for n, page in enumerate(pages, start=1):
        assert page.foot == f"{n} / {len(pages)}", n
        assert "Chalkboard" in page.head, n  # the header template's title


def test_pdf_has_an_outline_and_tags(pdf):
    """Bookmarks name every chapter, and the PDF is tagged (the final pass prints with both)."""
    titles = set()

    def walk(items):
        for item in items:
            if isinstance(item, list):
                walk(item)
            else:
                titles.add(_flat(item.title))

    walk(pdf.outline)
    assert {_flat(c.title) for c in derivations.CHAPTERS} <= titles
    root = pdf.trailer["/Root"]
    assert "/StructTreeRoot" in root and root["/MarkInfo"]["/Marked"]


def test_contents_give_the_page_each_chapter_starts_on(printed_site, pages):
    page = (printed_site / PRINT_PAGE).read_text(encoding="utf-8")
    numbers = [int(n) for n in re.findall(r'<span class="toc-page">(\d+)</span>', page)]
    book = book_pages()
    assert len(numbers) == len(book) and numbers == sorted(numbers) and numbers[0] > 1
    # the numbers are where the PDF's anchors of each page are (its links and outline agree)
    anchors = start_pages(printed_site / PDF_NAME)  # read once: half a second per reading
    assert numbers == [anchors[i] for i in range(len(book))]
    contents = " ".join(p.body for p in pages[1 : numbers[0] - 1])
    index = {md: i for i, (_, md) in enumerate(book)}
    for chapter in derivations.CHAPTERS:
        n = numbers[index[f"chapters/{chapter.id}.md"]]
        assert f"{_flat(chapter.title)} {n}" in contents, chapter.title  # "Title .... 42"
        # the chapter's title opens that page's body (page n is pages[n - 1], as the footer
        # counts; its running header, in the top margin, names the chapter on every page)
        assert pages[n - 1].body.startswith(_flat(chapter.title)), chapter.title
        assert pages[n - 1].foot == f"{n} / {len(pages)}"


def test_running_headers_name_the_part_a_page_belongs_to(pdf, pages):
    starts = start_pages_of(pdf)
    ends = [*starts[1:], len(pages) + 1]
    checked = 0
    for (title, md), first, after in zip(book_pages(), starts, ends, strict=True):
        for n in range(first + 1, min(after, first + 3)):  # a part's later pages
            assert _flat(running_header(md, title)) in pages[n - 1].head
            checked += 1
    assert checked >= len(derivations.CHAPTERS)


def start_pages_of(pdf) -> list[int]:
    found = {}
    for name, dest in pdf.named_destinations.items():
        if match := re.fullmatch(r"/?p(\d+)-page", name):
            found[int(match.group(1))] = pdf.get_destination_page_number(dest) + 1
    return [found[i] for i in range(len(book_pages()))]


def test_answers_are_printed_open(printed_site, text):
    page = (printed_site / PRINT_PAGE).read_text(encoding="utf-8")
    details = re.findall(r"<details[^>]*>", page)
    assert details and all(" open" in d for d in details)  # no collapsed answer on paper
    assert "Answer" in text and "Solution" in text


def small_site(root):
    """A site of the book's printed pages, each a few paragraphs of a different length (a
    figure-sized block in some, one block wider than the paper), that prints in seconds."""
    root.mkdir()
    (root / "index.html").write_text("<html><head></head><body></body></html>")
    for i, (title, md) in enumerate(book_pages()):
        page = root / _html_path(md)
        page.parent.mkdir(parents=True, exist_ok=True)
        body = f"<h1>{title}</h1>" + "<p>Words and more words to fill a line. </p>" * (9 * i % 70)
        if i % 3 == 1:
            body += '<figure style="height: 160mm">a tall figure that cannot break</figure>'
        if i == 2:  # wider than the paper: Chromium shrinks the whole book to fit it
            body += '<pre style="width: 240mm">a wide table</pre>'
        page.write_text(f'<article class="md-content__inner md-typeset">{body}</article>')
    return root


def _spy_prints(monkeypatch):
    """The prints write_pdf makes: "book" for the whole book, "front" for the front alone."""
    from book import pdf as book_pdf

    prints = []
    real = book_pdf._print

    def spy(page, path, total=None, scale=1):
        prints.append("book" if total is None else "front")
        real(page, path, total, scale)

    monkeypatch.setattr(book_pdf, "_print", spy)
    return prints


PDF_MENTION = '<p>The book prints as <span class="chalkboard-pdf">one PDF</span>.</p>'


@dataclass(frozen=True)
class SmallPrint:
    """``small_site`` printed once, first time, into its own folder (``write_pdf(site)``), with
    the prints that took. The tests that read it copy the site before changing anything."""

    site: object
    pdf: object
    prints: tuple


@pytest.fixture(scope="module")
def small_print(tmp_path_factory) -> SmallPrint:
    """One first print of ``small_site`` (its home page mentions the PDF, as the built one does:
    the print reads only its stylesheets, of which it has none), shared by the tests of a first
    print, of a reprint and of keeping a PDF: each printed its own, the same, before."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        prints = _spy_prints(monkeypatch)
        site = small_site(tmp_path_factory.mktemp("small") / "site")
        (site / "index.html").write_text(f"<html><body>{PDF_MENTION}</body></html>")
        out = write_pdf(site)
    return SmallPrint(site=site, pdf=out, prints=tuple(prints))


def test_the_book_prints_once_and_its_front_matter_again_with_the_numbers(small_print):
    """One print of the whole book; the front matter alone, printed again with the contents'
    page numbers, replaces the first pages, drawn where they were: its links (the book's) still
    lie on the titles, its footers count the whole book, its marked-content ids are the book's."""
    from pypdf import PdfReader

    out = small_print.pdf
    assert small_print.prints == ("book", "front")
    starts = start_pages(out)
    assert len(set(starts.values())) == len(starts) and max(starts.values()) > len(starts)
    read = read_pages(out)
    assert read[-1].foot == f"{len(read)} / {len(read)}" and "Chalkboard" in read[-1].head
    front = range(min(starts.values()) - 1)
    assert [read[n].foot for n in front] == [f"{n + 1} / {len(read)}" for n in front]
    contents = "".join(read[n].body for n in front).replace(" ", "")  # no CSS here: no dots
    for i, (title, _) in enumerate(book_pages()):
        assert f"{title}{starts[i]}".replace(" ", "") in contents, title  # "Title .... 42"
    # each contents link lies on its title's text, as printed in the new pages
    import pypdfium2

    doc, pdf = pypdfium2.PdfDocument(out), PdfReader(out)
    try:
        titles = iter(_flat(t) for t, _ in book_pages())
        for n in front:
            text = doc[n].get_textpage()
            for annot in pdf.pages[n].get("/Annots") or []:
                x0, y0, x1, y1 = (float(v) for v in annot.get_object()["/Rect"])
                inside = _flat(text.get_text_bounded(left=x0, bottom=y0, right=x1, top=y1))
                assert inside == next(titles), (n, inside)
    finally:
        doc.close()
    assert next(titles, None) is None  # every title had its link


def test_a_reprint_that_moves_no_page_break_prints_once(small_print, tmp_path, monkeypatch):
    """An earlier PDF of the book gives the first guess of the contents' numbers: an edit that
    moves no page break prints the book once and no front matter; one that does prints the front
    matter again; the PDF is the same either way. The first print is ``small_print``'s; this
    test prints from a copy of its site."""
    import shutil

    site = shutil.copytree(small_print.site, tmp_path / "site")
    first = shutil.copy2(small_print.pdf, tmp_path / "first.pdf")
    assert small_print.prints == ("book", "front")
    prints = _spy_prints(monkeypatch)
    again = write_pdf(site, out=tmp_path / "again.pdf", previous=first)
    assert prints == ["book"]  # the guess held
    assert start_pages(again) == start_pages(first)
    assert read_pages(again) == read_pages(first)

    page = site / _html_path(book_pages()[0][1])  # the first part grows by two pages
    page.write_text(
        page.read_text().replace("</article>", "<p style='height:500mm'></p></article>")
    )
    prints.clear()
    moved = write_pdf(site, out=tmp_path / "moved.pdf", previous=first)
    assert prints == ["book", "front"]  # the guess was wrong: the front printed again
    assert start_pages(moved)[1] > start_pages(first)[1]
    contents = "".join(p.body for p in read_pages(moved)[: start_pages(moved)[0] - 1])
    assert f"{book_pages()[1][0]}{start_pages(moved)[1]}".replace(" ", "") in contents.replace(
        " ", ""
    )


def test_a_failed_print_leaves_the_previous_pdf(printed_site, tmp_path, monkeypatch):
    before = (printed_site / PDF_NAME).read_bytes()
    monkeypatch.setenv("CHALKBOARD_CHROMIUM", str(tmp_path / "no-such-chromium"))
    with pytest.raises(ChalkboardError, match="printing the PDF failed"):
        write_pdf(printed_site)
    assert (printed_site / PDF_NAME).read_bytes() == before
    assert not list(printed_site.glob(f".{PDF_NAME}*"))


def test_printing_an_unbuilt_site_is_one_error(tmp_path):
    with pytest.raises(ChalkboardError, match="build the site"):
        write_pdf(tmp_path)


def test_a_site_links_its_pdf_only_when_it_holds_it_and_keeps_a_current_one(small_print, tmp_path):
    """The home page mentions the PDF as text; printing makes it a link. A build without
    ``--pdf`` keeps the previous PDF only when it was printed from the same pages. The printed
    site is ``small_print``'s (printed with ``write_pdf(site)``, its home page mentioning the
    PDF)."""
    from book.pdf import DIGEST_NAME, keep_pdf

    mention = PDF_MENTION
    link = '<a class="chalkboard-pdf" href="chalkboard.pdf">one PDF</a>'

    def site(name):
        root = small_site(tmp_path / name)
        (root / "index.html").write_text(f"<html><body>{mention}</body></html>")
        return root

    printed = small_print.site
    assert small_print.pdf == printed / PDF_NAME
    assert link in (printed / "index.html").read_text() and (printed / DIGEST_NAME).is_file()

    same = site("same")
    assert keep_pdf(printed, same)
    assert (same / PDF_NAME).read_bytes() == (printed / PDF_NAME).read_bytes()
    assert link in (same / "index.html").read_text()

    changed = site("changed")
    first = changed / _html_path(book_pages()[0][1])
    first.write_text(first.read_text() + "<p>A new paragraph.</p>")
    assert not keep_pdf(printed, changed)  # a stale PDF is dropped, not shown as current
    assert not (changed / PDF_NAME).exists() and mention in (changed / "index.html").read_text()
    assert not keep_pdf(tmp_path / "no-site", site("fresh"))


def test_the_built_home_page_links_the_pdf(printed_site):
    index = (printed_site / "index.html").read_text(encoding="utf-8")
    assert '<a class="chalkboard-pdf" href="chalkboard.pdf">' in index


def test_calculators_print_their_reference_values(pages):
    """A form prints as empty boxes: each input's reference value is printed as text."""
    from book.calculators import calculator
    from book.format import number

    spec = calculator("routed_expert_params")
    values = [number(a["value"]) for a in spec["args"]]
    found = [p.text for p in pages if "Calculator" in p.text and "routed experts" in p.text]
    assert found and any(all(v in _flat(t) for v in values) for t in found), values


def test_box_titles_print_with_no_icon_over_their_first_letters(printed_site, page):
    """Material draws a box's icon in its title's left padding; printed, no icon may reach into
    the text (the print stylesheet drops it). Checked with the site's own stylesheets."""
    from book.pdf import PRINT_CSS, STYLESHEET

    head = (printed_site / "index.html").read_text(encoding="utf-8")
    css = "".join(f'<link rel="stylesheet" href="{h}">' for h in STYLESHEET.findall(head))
    boxes = (
        '<div class="admonition note"><p class="admonition-title">Note</p><p>x</p></div>'
        '<div class="admonition abstract"><p class="admonition-title">Takeaways</p></div>'
        '<details class="tip" open><summary>Answer</summary><p>x</p></details>'
        '<details class="chalkboard-calc" open><summary>Calculator</summary></details>'
    )
    test_page = printed_site / "box-titles-test.html"
    test_page.write_text(
        f"<!doctype html><html><head>{css}<style>{PRINT_CSS}</style></head><body>"
        f'<article class="md-content__inner md-typeset">{boxes}</article></body></html>'
    )
    try:
        page.emulate_media(media="print")
        page.goto(test_page.as_uri())
        overlaps = page.evaluate(
            """() => [...document.querySelectorAll('.admonition-title, summary')].map(el => {
                const icon = getComputedStyle(el, '::before');
                const text = parseFloat(getComputedStyle(el).paddingLeft);
                const drawn = icon.display !== 'none' && icon.content !== 'none';
                const right = parseFloat(icon.left || 0) + parseFloat(icon.width || 0);
                return drawn && right > text ? el.textContent : null;
            }).filter(Boolean)"""
        )
    finally:
        test_page.unlink()
    assert overlaps == []
