"""The test session's one build of the book with its PDF, made in the background.

The build and its two prints of the PDF are the longest chain of a test session (about two
minutes of one core), and five test files read its result. It runs in a process of its own,
started as soon as a session has collected a test that needs it (``start``, from
tests/conftest.py), while the xdist workers run every test that does not; the files that read the
site come last and wait for it (``wait``, from the ``printed_site`` fixture). Every worker uses
the same build: the first to start it claims the session's folder with an atomic ``mkdir``, and
the build writes its exit status last, atomically. The controller stops a build still running
when the session ends (``stop``).
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
    from book import site as book_site
    from book.cli import main
    book_site.DOCS = Path(docs)
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
