"""Practice problems: seeded, with answers recomputed by an independent path, and the browser's
answer checker property-tested under Node."""

import json
import math
import shutil
import subprocess

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import derivations
from book.problems import answer_spec, problem_set, unit_table
from book.site import ASSETS
from units import Q_, ChalkboardError


@pytest.fixture(scope="module")
def problems():
    return problem_set(seed=11, count=4)


def test_same_seed_same_set_and_other_seeds_differ():
    a = [p.to_dict() for p in problem_set(seed=3, count=3)]
    b = [p.to_dict() for p in problem_set(seed=3, count=3)]
    c = [p.to_dict() for p in problem_set(seed=4, count=3)]
    assert a == b and a != c


def test_every_chapter_gets_problems_of_every_kind(problems):
    assert {p.chapter for p in problems} == {c.id for c in derivations.CHAPTERS}
    many = problem_set(seed=5, count=8)
    assert {p.kind for p in many} == {"forward", "inverse", "estimate"}


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
    if p.kind == "inverse":
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
    values = {sp.Symbol(n, positive=True): i.base.m for n, i in result.inputs.items()}
    exact = float(expr.subs(values))
    shown = Q_(exact, eq.lhs.base_unit).to(p.answer.units).m
    if p.kind == "estimate":
        return 10.0 ** round(math.log10(shown)), p.answer.m
    return shown, p.answer.m


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_answer_recomputed_independently(seed):
    for p in problem_set(seed=seed, count=6):
        got, stated = independent_value(p)
        assert got == pytest.approx(stated, rel=1e-9), p.id


def test_problems_state_givens_with_units_and_a_worked_solution(problems):
    for p in problems:
        assert p.givens and all(g.text for g in p.givens)
        assert p.solution[-1].count("**") == 2  # the final answer, in bold


def test_unknown_chapter_and_bad_count():
    with pytest.raises(ChalkboardError, match="did you mean 'moe'"):
        problem_set("mo")
    with pytest.raises(ChalkboardError, match="from 1 to"):
        problem_set("moe", count=0)
    with pytest.raises(ChalkboardError, match="from 1 to"):
        problem_set("moe", count=10**6)


# -- the client-side answer checker, run under Node ----------------------------------------

NODE = shutil.which("node") or shutil.which("nodejs")
RUNNER = """
const api = require(process.argv[1]);
let input = '';
process.stdin.on('data', d => input += d);
process.stdin.on('end', () => {
  const job = JSON.parse(input);
  api.setUnits(job.table);
  console.log(JSON.stringify(job.cases.map(c => api.check(c.text, c.answer))));
});
"""


def run_checker(cases):
    assert NODE, "Node.js is needed to test the browser's answer checker and was not found"
    done = subprocess.run(
        [NODE, "-e", RUNNER, str(ASSETS / "javascripts" / "answer-check.js")],
        input=json.dumps({"table": unit_table(), "cases": cases}),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def spec(q, tolerance=0.01, mode="relative"):
    base = q.to_base_units()
    from book.problems import dims_vector

    return {
        "value": base.m,
        "dims": dims_vector(base),
        "tolerance": tolerance,
        "mode": mode,
        "unit": f"{q.units:~P}",
    }


EQUIVALENT = {
    "s": ["s", "ms", "us", "min", "h", "ks"],
    "byte/s": ["B/s", "GB/s", "TB/s", "kB/ms", "GiB/s", "bit/s"],
    "USD/token": ["USD/token", "USD/Mtok", "USD/ktoken", "dollar/tok"],
    "FLOP/byte": ["FLOP/B", "flop/byte", "TFLOP/TB", "kFLOP/kB"],
    "byte/token": ["B/tok", "kB/token", "MB/Mtok"],
}
# Counts (tokens) are dimensionless, so a wrong unit must differ in time, bytes, FLOPs or USD.
OTHER = {"s": "GB", "byte/s": "s", "USD/token": "USD/s", "FLOP/byte": "FLOP", "byte/token": "B/s"}


@st.composite
def checker_cases(draw):
    dim = draw(st.sampled_from(sorted(EQUIVALENT)))
    value = draw(st.floats(1e-3, 1e6))
    answer = Q_(value, dim)
    unit = draw(st.sampled_from(EQUIVALENT[dim]))
    shown = answer.to(unit).m
    inside = draw(st.floats(0.995, 1.005))
    outside = draw(st.sampled_from([0.9, 0.98, 1.02, 1.5]))
    return [
        ({"text": f"{shown * inside!r} {unit}", "answer": spec(answer)}, True),
        ({"text": f"{shown * outside:.6e} {unit}", "answer": spec(answer)}, False),
        ({"text": f"{shown} {OTHER[dim]}", "answer": spec(answer)}, "dimension"),
    ]


@given(st.lists(checker_cases(), min_size=1, max_size=10))
def test_checker_accepts_equivalent_units_and_respects_tolerance(batches):
    cases = [case for batch in batches for case in batch]
    results = run_checker([c for c, _ in cases])
    for (case, expected), got in zip(cases, results, strict=True):
        if expected == "dimension":
            assert not got["ok"] and got["message"].startswith("Wrong dimension"), case
        else:
            assert got["ok"] is expected, (case, got)


def test_checker_examples_from_the_issue():
    answer = spec(Q_(24, "ms"))
    texts = ["24 ms", "0.024 s", "2.4e-2 s", "24000 us", "25 ms", "24 GB", "24", "ms", "24 parsecs"]
    results = run_checker([{"text": t, "answer": answer} for t in texts])
    assert [r["ok"] for r in results] == [True, True, True, True, False, False, False, False, False]
    assert "Wrong dimension" in results[5]["message"] and "time" in results[5]["message"]
    assert "unknown unit 'parsecs'" in results[8]["message"]


def test_estimates_are_graded_within_a_factor():
    answer = spec(Q_(100, "ms"), tolerance=10**0.5, mode="factor")
    results = run_checker([{"text": t, "answer": answer} for t in ("40 ms", "0.3 s", "20 ms")])
    assert [r["ok"] for r in results] == [True, True, False]


def test_answer_spec_matches_the_problem(problems):
    for p in problems:
        s = answer_spec(p)
        assert s["value"] == pytest.approx(p.answer.to_base_units().m)
