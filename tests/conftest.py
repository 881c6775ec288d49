"""Hypothesis profiles: quick for development, thorough for CI (HYPOTHESIS_PROFILE=ci).

``make test`` runs pytest on every core with pytest-xdist (``-n auto --dist loadgroup``). Each
test file goes whole to one worker, so a module-scoped fixture is made once; every test that
uses the session's built site (``printed_site``, tests/book/conftest.py) goes to one worker, so
the site is built once. A test that writes outside its ``tmp_path`` must not collide with
itself running beside another file's tests in a second process.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
collect_ignore = ["fixtures/my_derivations.py"]  # a user module for --extra, not a test

SITE_FIXTURES = {"printed_site", "site_docs"}  # tests/book/conftest.py: one build per session


def pytest_collection_modifyitems(items):
    """Group tests for ``--dist loadgroup``: the site's users together, the rest by file."""
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        uses_site = SITE_FIXTURES & set(getattr(item, "fixturenames", ()))
        group = "built-site" if uses_site else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
