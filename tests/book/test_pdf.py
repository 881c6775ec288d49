"""The whole book as one PDF (book/pdf.py), printed by the system Chromium and read back with
pypdf. Like test_browser.py, it fails (never skips) when Chromium cannot be found."""

import re

import pytest
from pypdf import PdfReader

import derivations
from book.pdf import PDF_NAME, PRINT_PAGE, book_pages, write_pdf
from units import ChalkboardError


@pytest.fixture(scope="module")
def pdf(printed_site):
    return PdfReader(printed_site / PDF_NAME)


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def text(pdf):
    """The whole PDF's text, whitespace collapsed (read once: pypdf takes seconds per book)."""
    return _flat(" ".join(p.extract_text() for p in pdf.pages))


def test_pdf_is_written_without_leftovers(printed_site):
    assert (printed_site / PDF_NAME).stat().st_size > 0
    assert not list(printed_site.glob(f".{PDF_NAME}*"))  # no temporary file left behind


def test_page_count_is_sane(pdf):
    sections = book_pages()
    # each printed page starts on a new sheet after the title and the contents
    assert len(pdf.pages) >= len(sections) + 1
    assert len(pdf.pages) <= 40 * len(sections)


def test_text_holds_every_chapter_title_contents_and_page_numbers(pdf, text):
    for chapter in derivations.CHAPTERS:
        assert _flat(chapter.title) in text, chapter.title
    assert "Contents" in _flat(pdf.pages[0].extract_text() + pdf.pages[1].extract_text())
    n = len(pdf.pages)
    assert f"{n} / {n}" in _flat(pdf.pages[-1].extract_text())  # the footer's page numbers
    assert "Chalkboard" in _flat(pdf.pages[-1].extract_text())  # the running header


def test_answers_are_printed_open(printed_site, text):
    page = (printed_site / PRINT_PAGE).read_text(encoding="utf-8")
    details = re.findall(r"<details[^>]*>", page)
    assert details and all(" open" in d for d in details)  # no collapsed answer on paper
    assert "Answer" in text and "Solution" in text


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
