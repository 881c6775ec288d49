"""The formula drill (generated one-equation problems): seeded, with answers recomputed by an
independent path; and the browser's answer checker property-tested under Node. The authored
problems' gates are in test_problem_bank.py."""

import functools
import re

import pytest
import sympy as sp

import derivations
from book.problems import (
    KINDS,
    PRICE_DEDUCTIONS,
    PROBLEMS_PER_CHAPTER,
    answer_spec,
    drill_set,
    supported_kinds,
)
from units import Q_, ChalkboardError
from units.presets import load


@pytest.fixture(scope="module")
def problems():
    return drill_set(seed=11, count=4)


@functools.cache
def shared_set(seed: int, count: int) -> tuple:
    """``drill_set(seed=seed, count=count)`` made once for the tests that read the same one
    (a set is the same for the same seed: see the first test)."""
    return tuple(drill_set(seed=seed, count=count))


def test_same_seed_same_set_and_other_seeds_differ():
    a = [p.to_dict() for p in drill_set(seed=3, count=3)]
    b = [p.to_dict() for p in drill_set(seed=3, count=3)]
    c = [p.to_dict() for p in drill_set(seed=4, count=3)]
    assert a == b and a != c


def test_every_chapter_gets_problems_of_every_kind_it_supports(problems):
    assert {p.chapter for p in problems} == {c.id for c in derivations.CHAPTERS}
    many = drill_set(seed=5, count=8)
    assert {p.kind for p in many} == set(KINDS)
    for chapter in derivations.CHAPTERS:
        offered = {p.kind for p in many if p.chapter == chapter.id}
        assert offered == set(supported_kinds(chapter.id)), chapter.id
        if chapter.id != "validation":  # its bounds chain five or more of chapter A's equations
            assert {"forward", "multi", "inverse", "estimate", "concept"} <= offered, chapter.id
        assert {"inverse", "estimate", "concept"} <= offered, chapter.id
    assert "design" in supported_kinds("batching")


@pytest.mark.parametrize("count", [3, PROBLEMS_PER_CHAPTER])  # the CLI's default, the site's
def test_multi_step_problems_are_at_least_thirty_percent_of_a_default_set(count):
    problems = shared_set(0, count)
    multi = [p for p in problems if p.kind == "multi"]
    assert len(multi) >= 0.3 * len(problems)


def test_multi_step_problems_chain_two_to_four_equations_with_only_needed_givens():
    from derivations.inputs import reachable

    for p in drill_set(seed=2, count=6, kind="multi"):
        eq = derivations.get(p.equation)
        result = eq.evaluate_detailed(**p.choices)
        steps = {
            i.origin.split()[1] for i in result.inputs.values() if i.origin.startswith("equation")
        }
        assert 2 <= len(steps) + 1 <= 4, p.id
        assert len(p.solution) >= len(steps) + 1  # every intermediate is a line
        for line in p.solution:
            assert re.search(r"= \**[\d.,e-]+( [A-Za-z/%]+)?", line), line
        for g in p.givens:  # a given is read by the answer, never decoration
            assert g.name in reachable(eq) or g.name in result.inputs, (p.id, g.name)


def test_design_problems_are_answered_by_searching_the_presets():
    from book.problems import DESIGN, DESIGN_BATCHES, PRECISIONS

    presets = load()
    problems = drill_set(seed=4, count=2, kind="design")
    assert {p.chapter for p in problems} == set(DESIGN)
    for p in problems:
        model = p.choices["model"]
        bound = presets.parameter["train_period"].value
        best = None
        for hw in DESIGN[p.chapter][1]:  # an independent brute force over every choice
            for precision in PRECISIONS:
                for b in DESIGN_BATCHES:
                    kw = dict(
                        hardware=hw, model=model, precision=precision, batch_size=Q_(b, "sequence")
                    )
                    try:
                        step = derivations.get("step_time").evaluate(**kw)
                        cost = derivations.get("cost_per_token").evaluate(**kw)
                    except ChalkboardError:
                        continue
                    if step <= bound and (best is None or cost < best):
                        best = cost
        assert p.answer.to("USD/Mtoken").m == pytest.approx(best.to("USD/Mtoken").m, rel=1e-9)


def test_inverse_problems_deduce_from_api_prices():
    problems = drill_set("long_context", seed=1, count=3, kind="inverse")
    assert problems and all(p.equation in PRICE_DEDUCTIONS for p in problems)
    assert all("published prices" in p.text for p in problems)


def test_concept_problems_have_a_hint_and_a_prose_answer():
    problems = drill_set(seed=0, count=2, kind="concept")
    assert {p.chapter for p in problems} == {c.id for c in derivations.CHAPTERS}
    for p in problems:
        assert p.hint and p.answer is None and len(p.solution[0]) > 80
        assert "?" in p.text


def test_kind_filter_and_unknown_kind():
    assert {p.kind for p in drill_set(seed=0, count=2, kind="estimate")} == {"estimate"}
    with pytest.raises(ChalkboardError, match="did you mean 'multi'"):
        drill_set(kind="mult")


def test_estimates_are_graded_on_the_true_value_and_state_the_factor():
    # The bug: the answer was the rounded power of ten, so a true 47 ms accepted 32-316 ms
    # (around 100 ms) and rejected the true value's neighbourhood below 32 ms.
    estimates = [p for p in shared_set(0, 8) if p.kind == "estimate"]
    assert estimates
    for p in estimates:
        true = derivations.get(p.equation).evaluate(**p.choices)
        assert p.answer.to(true.units).m == pytest.approx(true.m, rel=1e-12), p.id
        assert answer_spec(p)["value"] == pytest.approx(true.to_base_units().m, rel=1e-12)
        assert "factor of 3.16 " in p.text  # sqrt(10) to 3 figures, stated on the problem


def fully_expanded(eq, result):
    """The right side in terms of the problem's givens only: intermediates (including those
    chosen by a model's attention type) replaced by their own right sides, by sympy."""
    expr = eq.rhs
    given_names = {n for n, i in result.inputs.items() if not i.origin.startswith("equation")}
    for _ in range(20):
        todo = {s for s in expr.free_symbols if s.name not in given_names}
        if not todo:
            return expr
        subs = {}
        for s in todo:
            if s.name in result.inputs:  # the equation it came from, e.g. by attention type
                inner = derivations.get(result.inputs[s.name].origin.split()[1])
            else:  # inlined inside another equation: its defining equation
                inner = derivations.defining(s.name)
            subs[s] = inner.rhs
        expr = expr.subs(subs)
    raise AssertionError("expansion did not finish")


def independent_value(p):
    """Evaluate the problem's equation by sympy substitution of its givens (base units)."""
    if p.kind == "inverse" and "_for_" in p.equation:
        original_id, _, target = p.equation.partition("_for_")
        eq = derivations.get(original_id)
        overrides = {g.name: g.value for g in p.givens if g.name != eq.lhs.name}
        overrides[target] = p.answer
        forward = eq.evaluate(**p.choices | overrides)  # substitute the answer back
        wanted = next(g.value for g in p.givens if g.name == eq.lhs.name)
        return forward.to(wanted.units).m, wanted.m
    eq = derivations.get(p.equation)
    result = eq.evaluate_detailed(**p.choices)
    expr = fully_expanded(eq, result)
    values = {sp.Symbol(n, positive=True): sp.Float(i.base.m) for n, i in result.inputs.items()}
    # every given replaced at once, then sympy's arithmetic (subs would re-simplify each max
    # at every partial substitution: most of this check's time, for the same number)
    exact = float(expr.xreplace(values))
    shown = Q_(exact, eq.lhs.base_unit).to(p.answer.units).m
    return shown, p.answer.m


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_answer_recomputed_independently(seed):
    for p in drill_set(seed=seed, count=6):
        if p.kind in ("concept", "design"):  # prose; a search (tested below)
            continue
        got, stated = independent_value(p)
        assert got == pytest.approx(stated, rel=1e-9), p.id


def test_problems_state_givens_with_units_and_a_worked_solution(problems):
    for p in problems:
        if p.kind == "concept":
            continue
        assert p.givens and all(g.text for g in p.givens)
        assert any(line.count("**") == 2 for line in p.solution)  # the answer, in bold


def test_unknown_chapter_and_bad_count():
    with pytest.raises(ChalkboardError, match="did you mean 'moe'"):
        drill_set("mo")
    with pytest.raises(ChalkboardError, match="from 1 to"):
        drill_set("moe", count=0)
    with pytest.raises(ChalkboardError, match="from 1 to"):
        drill_set("moe", count=10**6)


# The answer checker itself is tested in tests/book/test_checker.py.


def test_answer_spec_matches_the_problem(problems):
    for p in problems:
        if p.answer is None:
            continue
        s = answer_spec(p)
        assert s["value"] == pytest.approx(p.answer.to_base_units().m)
