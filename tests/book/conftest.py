"""One site for the browser and PDF tests, built (with its PDF) once per session."""

import pytest

from book.cli import main


@pytest.fixture(scope="session")
def printed_site(tmp_path_factory):
    """The built site with ``chalkboard.pdf``; fails loudly (never skips) without Chromium."""
    from tests.book.test_browser import chromium_path

    chromium_path()
    site = tmp_path_factory.mktemp("book") / "site"
    assert main(["build", "--out", str(site), "--pdf"]) == 0
    return site
