"""Authored problems of the pipeline, over-training and reversible chapters: each file keeps the
contract of book/problem_bank over many seeds.

For every problem and seeds 0..30: the kind and equation ids are real, the answer is a finite
positive quantity, every listed mistake lies outside the grading window (a student who makes it
is told so rather than accepted), the text carries no template debris, and a seed always draws
the same problem.
"""

import math
import random
import re

import pint
import pytest

import derivations
from book.problem_bank import KINDS, Draw, modules
from units.presets import load

CHAPTERS = ("pipeline", "overtraining", "reversible")
SEEDS = range(31)
PROBLEMS = [m for chapter in CHAPTERS for m in modules(chapter)]
IDS = [m.__name__.split(".", 2)[2] for m in PROBLEMS]

DOUBLED = re.compile(r"\b([A-Za-z]+)\s+\1\b", re.IGNORECASE)
NAN = re.compile(r"\b(nan|inf)\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def presets():
    return load()


def texts(d: Draw) -> list[str]:
    return [d.text, *d.solution, d.hint, *(m.why for m in d.mistakes)]


def test_each_chapter_has_eight_problems_with_a_design_and_an_estimate():
    for chapter in CHAPTERS:
        kinds = [m.KIND for m in modules(chapter)]
        assert len(kinds) >= 8, chapter
        assert "design" in kinds and "estimate" in kinds, (chapter, kinds)
        assert kinds.count("multi") >= len(kinds) // 2, (chapter, kinds)


@pytest.mark.parametrize("module", PROBLEMS, ids=IDS)
def test_contract(module):
    assert module.KIND in KINDS
    assert isinstance(module.TITLE, str) and module.TITLE.strip()
    for eq in module.USES:
        derivations.get(eq)  # raises on an unknown id
    if module.KIND == "multi":
        assert len(module.USES) >= 2
    lecture = getattr(module, "LECTURE", None)
    assert lecture is None or re.fullmatch(r"(\d:)?\d\d:\d\d", lecture), lecture


@pytest.mark.parametrize("module", PROBLEMS, ids=IDS)
def test_draws_over_seeds(module, presets):
    seen = set()
    for seed in SEEDS:
        d = module.draw(random.Random(seed), presets)
        where = f"{module.__name__} seed {seed}"
        assert isinstance(d, Draw), where
        a = d.answer
        assert isinstance(a, pint.Quantity), where
        assert math.isfinite(a.magnitude) and a.magnitude > 0, (where, a)
        assert d.solution and d.text.rstrip().endswith(("?", ".")), where
        assert d.tolerance > 0, where
        if module.KIND == "estimate":
            assert d.tolerance > 1, where  # a factor, not a relative error
        if module.KIND == "design":
            assert d.choices, where
        for text in texts(d):
            assert "{" not in text and "}" not in text, (where, text)
            assert not NAN.search(text), (where, text)
            assert not DOUBLED.search(text), (where, DOUBLED.search(text).group(0), text)
        for m in d.mistakes:
            assert isinstance(m.value, pint.Quantity) and m.why.strip(), where
            if m.value.dimensionality != a.dimensionality:
                continue  # the checker diagnoses a wrong dimension on its own
            ratio = (m.value / a).to("").magnitude
            assert math.isfinite(ratio) and ratio > 0, (where, m.why)
            if module.KIND == "estimate":
                assert not 1 / d.tolerance <= ratio <= d.tolerance, (where, ratio, m.why)
            else:
                assert abs(ratio - 1) > d.tolerance, (where, ratio, m.why)
        again = module.draw(random.Random(seed), presets)
        assert (again.text, again.solution, again.answer) == (d.text, d.solution, d.answer), where
        seen.add(d.text)
    assert len(seen) >= 4, f"{module.__name__}: only {len(seen)} distinct problems in 31 seeds"
