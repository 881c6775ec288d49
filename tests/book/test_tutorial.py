"""The tutorial runs at build time; a failing block fails the build and nothing leaks out."""

import pytest

from book.tutorial import run_blocks, tutorial_page
from derivations import CATALOGUE, SYMBOLS
from units import ChalkboardError


def test_tutorial_runs_and_shows_outputs():
    before = (set(SYMBOLS), set(CATALOGUE))
    page = tutorial_page()
    assert page.count("```text") >= 6
    assert "8 steps, each checked" in page
    assert "term 'mem_bandwidth' has dimension" in page
    assert (set(SYMBOLS), set(CATALOGUE)) == before  # the tutorial's symbol did not leak


def test_a_failing_block_names_itself():
    with pytest.raises(ChalkboardError, match="block 2 raised ZeroDivisionError"):
        run_blocks("```python\nx = 1\n```\n\n```python\n1 / 0\n```\n", "page")
