"""Hypothesis profiles: quick for development, thorough for CI (HYPOTHESIS_PROFILE=ci).

``make test`` runs pytest on every core with pytest-xdist (``-n auto --dist loadgroup``). Each
test file goes whole to one worker, so a module-scoped fixture is made once; every test that
uses the session's built site (``printed_site``, tests/book/conftest.py) goes to one worker, so
the site is built once. That group is the longest chain of the session (a build, two prints of
the PDF, the browser tests), so it is handed out first: started last, it would finish last on
one worker while the other core idles. A test that writes outside its ``tmp_path`` must not
collide with itself running beside another file's tests in a second process.

The session has one cache folder of its own (``CHALKBOARD_CACHE_DIR``, made empty when the session
starts and removed when it ends): every build of the book in the session (``printed_site``, the
server's, ``--extra``'s in a subprocess) and every xdist worker share the proofs and figures one
of them wrote (units/diskcache.py), and no test reads a cache left by an earlier run or the
user's own.
"""

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
collect_ignore = ["fixtures/my_derivations.py"]  # a user module for --extra, not a test

SITE_FIXTURES = {"printed_site", "site_docs"}  # tests/book/conftest.py: one build per session
SITE_GROUP = "built-site"


def pytest_configure(config):
    """Register the xdist_group marker. The controller (or a run without xdist) makes the
    session's cache folder; xdist workers and subprocesses inherit it through the environment."""
    config.addinivalue_line("markers", "xdist_group(name): tests that run on one xdist worker")
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
    folder, saved = made
    shutil.rmtree(folder, ignore_errors=True)
    if saved is None:
        os.environ.pop("CHALKBOARD_CACHE_DIR", None)
    else:
        os.environ["CHALKBOARD_CACHE_DIR"] = saved


def pytest_collection_modifyitems(items):
    """Group tests for ``--dist loadgroup``: the site's users together and first, the rest by
    file (xdist hands out groups in the order their first test is collected)."""
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        uses_site = SITE_FIXTURES & set(getattr(item, "fixturenames", ()))
        group = SITE_GROUP if uses_site else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: item.get_closest_marker("xdist_group").args[0] != SITE_GROUP)
