"""The authored problems of the long-context and validation chapters keep the problem-file
contract on every seed a student may draw (book/problem_bank/__init__.py)."""

from __future__ import annotations

import math
import random
import re

import pint
import pytest

import derivations
from book.problem_bank import KINDS, Draw, modules
from units.presets import load

CHAPTERS = ("long_context", "validation")
SEEDS = range(31)
PROBLEMS = [m for chapter in CHAPTERS for m in modules(chapter)]
IDS = [m.__name__.split(".", 2)[2] for m in PROBLEMS]


@pytest.fixture(scope="module")
def presets():
    return load()


@pytest.fixture(scope="module")
def draws(presets):
    """Every problem's draw on every seed, drawn once for the module."""
    return {m.__name__: [m.draw(random.Random(s), presets) for s in SEEDS] for m in PROBLEMS}


def test_each_chapter_has_eight_problems_with_a_design_and_an_estimate():
    for chapter in CHAPTERS:
        kinds = [m.KIND for m in modules(chapter)]
        assert len(kinds) >= 8, chapter
        assert "design" in kinds, chapter
        assert "estimate" in kinds, chapter
        assert kinds.count("multi") >= len(kinds) // 2, chapter


@pytest.mark.parametrize("module", PROBLEMS, ids=IDS)
def test_contract(module):
    assert module.KIND in KINDS
    assert module.TITLE and module.TITLE.strip() == module.TITLE
    assert module.USES, "a problem names the equations its reasoning uses"
    for eq_id in module.USES:
        derivations.get(eq_id)  # raises on an id the catalogue does not hold
    if module.KIND == "multi":
        assert len(module.USES) >= 2
    lecture = getattr(module, "LECTURE", None)
    if lecture is not None:
        assert re.fullmatch(r"(\d:)?\d\d:\d\d", lecture), lecture


def _texts(draw: Draw) -> list[str]:
    return [draw.text, *draw.solution, draw.hint, *(m.why for m in draw.mistakes)]


DOUBLED = re.compile(r"\b(\w+)\s+\1\b", re.IGNORECASE)


@pytest.mark.parametrize("module", PROBLEMS, ids=IDS)
def test_every_draw_reads_cleanly(module, draws):
    for seed, draw in zip(SEEDS, draws[module.__name__], strict=True):
        for text in _texts(draw):
            where = f"seed {seed}: {text[:80]!r}"
            assert "{" not in text and "}" not in text, where  # an f-string left unfilled
            assert not re.search(r"\bnan\b|\binf\b", text, re.IGNORECASE), where
            doubled = [m.group(0) for m in DOUBLED.finditer(text) if not m.group(1).isdigit()]
            assert not doubled, f"{where}: doubled {doubled}"
        assert draw.text.rstrip().endswith("?") or "?" in draw.text, f"seed {seed}: no question"
        assert draw.solution and "**" in draw.solution[-1], f"seed {seed}: no bold answer"


@pytest.mark.parametrize("module", PROBLEMS, ids=IDS)
def test_answer_is_a_finite_positive_quantity(module, draws):
    for seed, draw in zip(SEEDS, draws[module.__name__], strict=True):
        answer = draw.answer
        assert isinstance(answer, pint.Quantity), f"seed {seed}"
        assert math.isfinite(answer.magnitude) and answer.magnitude > 0, f"seed {seed}"
        if module.KIND == "estimate":
            assert draw.tolerance > 1, "an estimate's tolerance is a factor"
        else:
            assert 0 < draw.tolerance < 0.1, "a relative tolerance, as the solution rounds"


def _outside(value: pint.Quantity, draw: Draw, estimate: bool) -> bool:
    """Whether ``value`` would be graded wrong against ``draw``'s answer."""
    if value.dimensionality != draw.answer.dimensionality:
        return True
    ratio = (value / draw.answer).to("").magnitude
    if estimate:
        return not (1 / draw.tolerance <= ratio <= draw.tolerance)
    return abs(ratio - 1) > draw.tolerance


@pytest.mark.parametrize("module", PROBLEMS, ids=IDS)
def test_every_listed_mistake_is_graded_wrong(module, draws):
    for seed, draw in zip(SEEDS, draws[module.__name__], strict=True):
        for mistake in draw.mistakes:
            assert math.isfinite(mistake.value.magnitude), f"seed {seed}: {mistake.why}"
            assert _outside(mistake.value, draw, module.KIND == "estimate"), (
                f"seed {seed}: {mistake.value} is graded right against {draw.answer} "
                f"(tolerance {draw.tolerance}): {mistake.why}"
            )
            assert mistake.why.endswith("."), f"seed {seed}: {mistake.why}"


def test_the_problems_list_mistakes():
    """Most problems diagnose at least one likely slip on most seeds."""
    for module in PROBLEMS:
        with_mistakes = sum(bool(module.draw(random.Random(s), load()).mistakes) for s in range(5))
        assert with_mistakes >= 3, module.__name__


@pytest.mark.parametrize("module", PROBLEMS, ids=IDS)
def test_draw_is_deterministic_for_a_seed(module, presets, draws):
    for seed in (0, 7, 30):
        again = module.draw(random.Random(seed), presets)
        first = draws[module.__name__][seed]
        assert again.text == first.text
        assert again.solution == first.solution
        assert again.answer == first.answer
        assert [m.value for m in again.mistakes] == [m.value for m in first.mistakes]


@pytest.mark.parametrize("module", PROBLEMS, ids=IDS)
def test_seeds_give_different_problems(module, draws):
    texts = {d.text for d in draws[module.__name__]}
    assert len(texts) >= 5, "the parameters a problem draws should vary between seeds"


def test_design_problems_name_their_choice_and_say_when_it_is_close(draws):
    for module in PROBLEMS:
        if module.KIND != "design":
            continue
        for seed, draw in zip(SEEDS, draws[module.__name__], strict=True):
            assert draw.choices, f"{module.__name__} seed {seed}: no choice named"
            close = [
                m
                for m in draw.mistakes
                if m.value.dimensionality == draw.answer.dimensionality
                and abs((m.value / draw.answer).to("").m - 1) < 0.05
            ]
            if close:
                assert "close" in " ".join(draw.solution), f"{module.__name__} seed {seed}"
