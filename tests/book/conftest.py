"""One site for the whole test session, built (with its PDF) once: the book tests share it
instead of building their own.

A test that reads the built site asks for ``printed_site`` (the site folder, with
``chalkboard.pdf``) or ``site_docs`` (the Markdown that build generated). Building the site
costs more than most test files, so a new test should reuse these rather than call ``chalkboard
build`` again, unless the build itself
(its flags, its failures) is what it tests; a user's ``--extra`` chapter is built by the live
server's build (test_serve.py). These fixtures never skip: without Chromium they fail, saying so.
The site is built once per session, in a process of its own that every xdist worker waits for
(tests/sitebuild.py). The browser tests share ``server`` (or ``search_server``), ``browser`` and
``page``.
"""

import contextlib
import functools
import http.server
import threading

import pytest


@pytest.fixture(scope="session")
def printed_site():
    """The built site with ``chalkboard.pdf``; fails loudly (never skips) without Chromium.

    One build per session, shared by every xdist worker, made in the background while the
    tests that do not need it run (tests/sitebuild.py)."""
    from tests import sitebuild
    from tests.book.browser import chromium_path

    chromium_path()
    return sitebuild.wait()


@pytest.fixture(scope="session")
def site_docs(printed_site):
    """The Markdown of ``printed_site``, as its build generated it."""
    return printed_site.parent / "docs"


@contextlib.contextmanager
def _serving(site, handler):
    handler = functools.partial(handler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits for the next poll (0.5 s by default)
    threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", site
    finally:
        httpd.shutdown()


@pytest.fixture(scope="module")
def server(printed_site):
    """``(base URL, site folder)``: the built site on a loopback port, sending an empty search
    index (``EmptySearchHandler`` in tests/book/browser.py); a search test asks for
    ``search_server``."""
    from tests.book.browser import EmptySearchHandler

    with _serving(printed_site, EmptySearchHandler) as served:
        yield served


@pytest.fixture(scope="module")
def search_server(printed_site):
    """``(base URL, site folder)``: the built site on a loopback port, exactly as built."""
    from tests.book.browser import QuietHandler

    with _serving(printed_site, QuietHandler) as served:
        yield served


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (the system's, with book/pdf.py's flags), one per test file."""
    from playwright.sync_api import sync_playwright

    from tests.book.browser import FLAGS, chromium_path

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh page (its own context: no storage shared between tests) that collects console
    errors and uncaught exceptions in ``page.errors``."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.errors = []
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    context.close()
