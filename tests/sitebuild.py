"""The test session's one build of the book with its PDF, made in the background.

The build and its two prints of the PDF are the longest chain of a test session (about two
minutes of one core), and five test files read its result. It runs in a process of its own,
started as soon as a session has collected a test that needs it (``start``, from
tests/conftest.py), while the xdist workers run every test that does not; the files that read the
site come last and wait for it (``wait``, from the ``printed_site`` fixture). Every worker uses
the same build: the first to start it claims the session's folder with an atomic ``mkdir``, and
the build writes its exit status last, atomically. The controller stops a build still running
when the session ends (``stop``). Before printing the PDF the build says its pages (and so the
session's caches) are written (``status.rendered``): the live server's own full build
(test_serve.py) waits for that (``wait_cached``) and reads those caches instead of computing the
same proofs and figures at the same time.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WAIT = 1800  # seconds: a whole build and two prints on a loaded machine, never an endless wait
# Run in the build's own process: its Markdown goes to the session's folder, not build/docs
# (book.site.DOCS), and its exit status is written last, whatever happened.
SCRIPT = """
import os, sys
from pathlib import Path
docs, site, status = sys.argv[1:4]
code = 1
try:
    from book import pdf as book_pdf, site as book_site
    from book.cli import main
    book_site.DOCS = Path(docs)
    print_pdf = book_pdf.write_pdf
    def write_pdf(*args, **kwargs):  # the pages are built and the caches written: say so
        Path(status + ".rendered").write_text("")
        return print_pdf(*args, **kwargs)
    book_pdf.write_pdf = write_pdf
    code = main(["build", "--out", site, "--pdf"])
finally:
    Path(status + ".tmp").write_text(str(code))
    os.replace(status + ".tmp", status)
"""


def folder() -> Path:
    """Where this session's build goes: inside the session's own cache folder (tests/conftest.py
    makes it, empty, and removes it when the session ends)."""
    return Path(os.environ["CHALKBOARD_CACHE_DIR"]) / "test-site"


def start() -> None:
    """Start the build, unless a process of this session already has."""
    here = folder()
    try:
        here.mkdir()
    except FileExistsError:
        return
    with (here / "build.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, *(str(here / n) for n in ("docs", "site", "status"))],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped whole, with its Chromium
        )
    (here / "pid").write_text(str(proc.pid))


def wait() -> Path:
    """The built site folder, once the build has finished; fails with the build's output if it
    failed or did not finish in ``WAIT`` seconds."""
    start()  # a session whose collection did not start it
    here = folder()
    status = here / "status"
    deadline = time.monotonic() + WAIT
    while not status.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the session's build did not finish in {WAIT} s: {_tail(here)}")
        time.sleep(0.2)
    if status.read_text() != "0":
        pytest.fail(f"the session's build failed: {_tail(here)}")
    return here / "site"


def wait_cached() -> None:
    """Wait until this session's build, if one was started, has written the site's pages (and
    with them the session's caches of proofs and figures: units/diskcache.py), or has ended; a
    later build in the session (``chalkboard serve``'s, test_serve.py) then reads them instead of
    computing them a second time beside it. Without a session build it returns at once: it never
    starts one. A build that fails is ``wait``'s to report, not this."""
    here = folder()
    if not (here / "pid").exists():
        return
    deadline = time.monotonic() + WAIT
    while not any((here / n).exists() for n in ("status.rendered", "status")):
        if time.monotonic() > deadline:
            return  # the later build computes for itself: slower, still right
        time.sleep(0.2)


def stop() -> None:
    """Stop the build (and its Chromium) if it is still running."""
    here = folder()
    pid = here / "pid"
    if not pid.exists() or (here / "status").exists():
        return
    with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
        os.killpg(int(pid.read_text()), signal.SIGKILL)


def _tail(here: Path) -> str:
    log = here / "build.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return " | ".join(lines[-8:]) or "(no output)"
