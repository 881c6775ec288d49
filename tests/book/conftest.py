"""One site for the whole test session, built (with its PDF) once, and one rendering of its
Markdown: the book tests share them instead of building their own.

A test that reads the built site asks for ``printed_site`` (the site folder, with
``chalkboard.pdf``) or ``site_docs`` (the Markdown that build generated); a test of the Markdown
alone asks for ``rendered_docs``. Building the site costs more than most test files, so a
new test should reuse these rather than call ``chalkboard build`` again, unless the build itself
(its flags, its failures, a user's ``--extra`` chapter) is what it tests. These fixtures never
skip: without Chromium they fail, saying so. Under pytest-xdist every test that uses
``printed_site`` runs on one worker (tests/conftest.py), so the site is still built once.
"""

import pytest

from book import site as book_site
from book.cli import main


@pytest.fixture(scope="session")
def printed_site(tmp_path_factory):
    """The built site with ``chalkboard.pdf``; fails loudly (never skips) without Chromium."""
    from tests.book.test_browser import chromium_path

    chromium_path()
    root = tmp_path_factory.mktemp("book")
    site, docs = root / "site", root / "docs"
    # The build moves its Markdown to book.site.DOCS (build/docs in the checkout); send it to this
    # session's own folder, so a build in another process (another xdist worker, a CLI test)
    # cannot swap that folder while this one writes or reads it.
    saved = book_site.DOCS
    book_site.DOCS = docs
    try:
        assert main(["build", "--out", str(site), "--pdf"]) == 0
    finally:
        book_site.DOCS = saved
    return site


@pytest.fixture(scope="session")
def site_docs(printed_site):
    """The Markdown of ``printed_site``, as its build generated it."""
    return printed_site.parent / "docs"


@pytest.fixture(scope="session")
def rendered_docs(tmp_path_factory):
    """``(folder, pages)``: the site's Markdown and assets rendered once (``book.site.render``),
    with the list of pages it returned; no mkdocs build, no browser."""
    docs = tmp_path_factory.mktemp("rendered") / "docs"
    return docs, book_site.render(docs)
