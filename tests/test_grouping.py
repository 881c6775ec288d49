"""tests/conftest.py's order of test files for pytest-xdist, and the session's background build
of the site (tests/sitebuild.py)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CHAPTER_CONTEXT_FILES, pytest_collection_modifyitems, scope_of

ROOT = Path(__file__).resolve().parents[1]


class Item:
    def __init__(self, nodeid, fixturenames=()):
        self.nodeid, self.fixturenames = nodeid, fixturenames


def test_the_files_that_read_the_site_come_last_and_the_rest_keep_their_order():
    items = [
        Item("tests/book/test_browser.py::test_a", ["page", "printed_site"]),
        Item("tests/book/test_site.py::test_b", ["site_docs"]),
        Item("tests/book/test_site.py::test_c", ["tmp_path"]),
        Item("tests/a.py::test_d"),
        Item("book/cards.py::book.cards"),  # a doctest has no fixturenames
        Item("tests/a.py::test_f"),
    ]
    pytest_collection_modifyitems(items)
    assert [i.nodeid.split("::")[1] for i in items] == [
        "test_d",
        "book.cards",
        "test_f",
        "test_a",
        "test_b",
        "test_c",  # with its file, though it reads no site itself
    ]


def test_the_files_that_compute_chapter_contexts_are_one_unit_and_exist():
    assert {scope_of(f"{f}::test_x") for f in CHAPTER_CONTEXT_FILES} == {"chapter contexts"}
    assert scope_of("book/compute.py::book.compute") == "chapter contexts"  # a doctest
    assert scope_of("tests/book/test_fast.py::test_x") == "tests/book/test_fast.py"
    assert scope_of("units/presets.py::units.presets.load") == "units/presets.py"
    assert all((ROOT / f).is_file() for f in CHAPTER_CONTEXT_FILES)  # a renamed file is seen


TOY_CONFTEST = """
import pytest
from tests.conftest import pytest_collection_modifyitems, pytest_xdist_make_scheduler

@pytest.fixture(scope="session")
def printed_site():
    return "site"
"""
TOY_TEST = """
import os, time

def record(name):
    with open({log!r}, "a") as log:
        log.write(f"{{__name__}} {{os.environ['PYTEST_XDIST_WORKER']}} {{name}}\\n")

def test_1({fixture}):
    time.sleep(0.2)
    record("1")

def test_2({fixture}):
    record("2")

def test_3({fixture}):
    record("3")
"""
SITE_TEST = (
    TOY_TEST
    + """
def test_4(printed_site):  # the most tests: xdist's default order would hand this file out first
    record("4")
"""
)


def test_make_tests_own_xdist_options_keep_each_file_on_one_worker(tmp_path):
    """The options on the Makefile's pytest line, run for real on a small suite: a file's tests
    share one worker (and so its module fixtures), both workers take part, and the file that
    reads the site runs after the others on its worker. (``--dist loadgroup`` silently stopped
    grouping with pytest 9.2: pytest-dev/pytest-xdist#1386.)"""
    line = next(x for x in (ROOT / "Makefile").read_text().splitlines() if "-m pytest" in x)
    options = line.split("-m pytest", 1)[1].split()
    assert "-n" in options
    options[options.index("-n") + 1] = "2"
    log = tmp_path / "ran.log"
    (tmp_path / "conftest.py").write_text(TOY_CONFTEST)
    for name in ("test_a", "test_b", "test_c", "test_d"):
        fixture = "printed_site" if name == "test_a" else "tmp_path"
        text = (SITE_TEST if name == "test_a" else TOY_TEST).format(log=str(log), fixture=fixture)
        (tmp_path / f"{name}.py").write_text(text)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "-q", "-p", "no:cacheprovider", "."],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = [line.split() for line in log.read_text().splitlines()]
    assert len(ran) == 13
    workers = {}
    for module, worker, _ in ran:
        workers.setdefault(module, set()).add(worker)
    assert all(len(w) == 1 for w in workers.values()), workers
    assert len(set().union(*workers.values())) == 2
    site_worker = workers["test_a"].pop()
    on_it = [module for module, worker, _ in ran if worker == site_worker]
    assert on_it[-4:] == ["test_a"] * 4 and len(on_it) > 4, on_it
    assert re.search(r"13 passed", done.stdout)


def test_the_build_starts_once_and_its_failure_is_one_clear_failure(monkeypatch, tmp_path):
    """tests/sitebuild.py: the first start claims the folder, a second does nothing; a build
    that fails makes ``wait`` fail with its output."""
    from tests import sitebuild

    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(sitebuild, "SCRIPT", SCRIPT_THAT_FAILS)
    sitebuild.start()
    pid = (tmp_path / "test-site" / "pid").read_text()
    sitebuild.start()
    assert (tmp_path / "test-site" / "pid").read_text() == pid  # one build per session
    with pytest.raises(pytest.fail.Exception, match="build failed: .*no such chapter"):
        sitebuild.wait()
    sitebuild.stop()  # finished: nothing to stop, no error


SCRIPT_THAT_FAILS = """
import sys
from pathlib import Path
print("error: no such chapter")
Path(sys.argv[3]).write_text("2")
"""


def test_the_session_has_a_fresh_cache_folder_of_its_own(monkeypatch, tmp_path):
    """Every build in the session shares one cache folder, made empty for this session: no
    test reads what an earlier run (or the user) cached."""
    import os
    from pathlib import Path

    from tests import conftest

    here = Path(os.environ["CHALKBOARD_CACHE_DIR"])
    assert here.name.startswith("chalkboard-test-cache-") and here.is_dir()

    class Config:
        def addinivalue_line(self, name, line):
            pass

    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(tmp_path / "the user's"))
    config = Config()
    conftest.pytest_configure(config)
    made = Path(os.environ["CHALKBOARD_CACHE_DIR"])
    assert made != here and made.is_dir() and list(made.iterdir()) == []
    (made / "entry").write_text("cached")
    conftest.pytest_unconfigure(config)
    assert not made.exists() and os.environ["CHALKBOARD_CACHE_DIR"] == str(tmp_path / "the user's")
    worker = Config()
    worker.workerinput = {}
    conftest.pytest_configure(worker)  # an xdist worker keeps the controller's folder
    assert os.environ["CHALKBOARD_CACHE_DIR"] == str(tmp_path / "the user's")
