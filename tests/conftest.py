"""Hypothesis profiles: quick for development, thorough for CI (HYPOTHESIS_PROFILE=ci).

``make test`` runs pytest on every core with pytest-xdist (``-n auto --dist loadfile
--no-loadscope-reorder``): each test file goes whole to one worker, so a module-scoped fixture is
made once (the files that compute the chapters' contexts go together: ``scope_of``), and files
are handed out in the order collected here (xdist would otherwise sort them by their number of
tests). The session's built site (``printed_site``, tests/book/conftest.py) is its longest
chain, a build and two prints of the PDF: as soon as a test that needs it is collected, it starts
in a process of its own (tests/sitebuild.py), the files that read it are handed out last, and
every worker reads the one build. A test that writes outside its ``tmp_path`` must not collide
with itself running beside another file's tests in a second process.

The session has one cache folder of its own (``CHALKBOARD_CACHE_DIR``, made empty when the session
starts and removed when it ends): every build of the book in the session (``printed_site``, the
server's, ``--extra``'s in a subprocess) and every xdist worker share the proofs and figures one
of them wrote (units/diskcache.py), and no test reads a cache left by an earlier run or the
user's own.
"""

import gc
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
collect_ignore = ["fixtures/my_derivations.py"]  # a user module for --extra, not a test

SITE_FIXTURES = {"printed_site", "site_docs"}  # tests/book/conftest.py: one build per session


def pytest_configure(config):
    """The controller (or a run without xdist) makes the session's cache folder; xdist workers
    and subprocesses inherit it through the environment. Every test process runs Python's
    cycle collector rarely, as a build does (book.site.collected_rarely: the suite's sympy and
    problem draws spent ≈4% of their CPU in it at the default thresholds)."""
    gc.set_threshold(20_000, 50, 100)
    if hasattr(config, "workerinput"):  # an xdist worker: the controller made the folder
        return
    folder = tempfile.mkdtemp(prefix="chalkboard-test-cache-")
    config._chalkboard_cache = (folder, os.environ.get("CHALKBOARD_CACHE_DIR"))
    os.environ["CHALKBOARD_CACHE_DIR"] = folder


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """A cache folder of the test's own, empty and switched on (units/diskcache.py)."""
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CHALKBOARD_FAST", raising=False)
    monkeypatch.delenv("CHALKBOARD_CACHE", raising=False)
    return tmp_path


def pytest_unconfigure(config):
    made = getattr(config, "_chalkboard_cache", None)
    if made is None:
        return
    from tests import sitebuild

    sitebuild.stop()  # a session cut short leaves no build running into a removed folder
    folder, saved = made
    shutil.rmtree(folder, ignore_errors=True)
    if saved is None:
        os.environ.pop("CHALKBOARD_CACHE_DIR", None)
    else:
        os.environ["CHALKBOARD_CACHE_DIR"] = saved


def uses_site(item) -> bool:
    return bool(SITE_FIXTURES & set(getattr(item, "fixturenames", ())))


def file_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(items):
    """The files that read the built site last, so that the workers run every other file while
    the site is built (``--dist loadfile`` hands files out in this order)."""
    site_files = {file_of(item) for item in items if uses_site(item)}
    items.sort(key=lambda item: file_of(item) in site_files)


# Files that compute the chapters' contexts (book/compute.py keeps them for the life of a
# process): they go to one worker as one unit, so each context is computed once, not once per
# worker (45 s of CPU together, 60 s split over two processes).
CHAPTER_CONTEXT_FILES = frozenset(
    f"tests/book/test_{name}.py"
    for name in (
        "batching_chapter calculators cards chapter_pipeline chapters claims context figures "
        "long_context_chapter notebooks overtraining pipeline problems reader_text tutorial "
        "validation"
    ).split()
)


# The chapters with authored problems (book/problem_bank/<chapter>/). Drawing a problem costs
# 10-500 ms and book.problems keeps every drawing for the life of a process; the gates over the
# bank draw the same problems on the same seeds (test_problem_bank.py seeds 0-39, its _mistakes
# 0-99, _edges 0-199, a chapter's own file 40-200). So a problem-bank test of one chapter goes
# with that chapter's others, whatever its file: each drawing is made once, and the bank's
# largest file (_mistakes) is shared out over the workers by chapter instead of being one
# worker's serial chunk.
BANK_CHAPTERS = frozenset(
    p.name
    for p in (Path(__file__).resolve().parents[1] / "book" / "problem_bank").iterdir()
    if p.is_dir() and not p.name.startswith("_")
)
BANK_TEST = re.compile(r"tests/book/test_problem_bank(?:_(\w+))?\.py")
PARAMETER = re.compile(r"\[(\w+)(?:\.\w+)?\]$")  # [chapter] or [chapter.problem]


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, one unit for the chapter-context files and
    the book's doctests, or one unit per chapter for the problem-bank tests of that chapter (a
    test parametrized by one of its problems or by the chapter, or in the chapter's own file).

    >>> scope_of("tests/book/test_fast.py::test_x")
    'tests/book/test_fast.py'
    >>> scope_of("book/cards.py::book.cards") == scope_of("tests/book/test_cards.py::test_y")
    True
    >>> scope_of("tests/book/test_problem_bank_mistakes.py::test_z[moe.experts_per_rack]")
    'problem bank: moe'
    >>> scope_of("tests/book/test_problem_bank.py::test_w[moe]")
    'problem bank: moe'
    >>> scope_of("tests/book/test_problem_bank_moe.py::test_v")
    'problem bank: moe'
    >>> scope_of("tests/book/test_problem_bank.py::test_u[7]")
    'tests/book/test_problem_bank.py'
    """
    file, _, test = nodeid.partition("::")
    if file.startswith("book/") or file in CHAPTER_CONTEXT_FILES:
        return "chapter contexts"
    bank = BANK_TEST.fullmatch(file)
    if bank:
        param = PARAMETER.search(test)
        for chapter in (param and param[1], bank[1]):
            if chapter in BANK_CHAPTERS:
                return f"problem bank: {chapter}"
    return file


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with the units of :func:`scope_of`."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return Scheduling(config, log)


def pytest_collection_finish(session):
    """Start building the site in the background when a collected test will read it."""
    if session.config.option.collectonly or not any(map(uses_site, session.items)):
        return
    from tests import sitebuild

    sitebuild.start()
