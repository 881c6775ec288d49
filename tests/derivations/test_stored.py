"""derivations/stored.py: compiled equations kept across builds, as data under their inputs."""

import dataclasses
import json

import numpy as np
import pytest

from derivations import CATALOGUE, core, get, stored
from units import diskcache


@pytest.fixture
def store(empty_cache):
    stored._store.cache_clear()  # the store's folder is read from the (test's) cache root
    yield stored._store()
    stored._store.cache_clear()


def _fresh(eq):
    """The same equation with nothing compiled in this process."""
    return dataclasses.replace(eq)


def _entries(root):
    return sorted(p for p in (root / diskcache.FOLDER / "compiled").rglob("*") if p.is_file())


def test_every_stored_function_gives_the_bits_lambdify_gives(store):
    rng = np.random.default_rng(0)
    checked = 0
    for eq in map(_fresh, CATALOGUE.values()):
        if not eq.evaluable:
            continue
        fn = eq.compiled()
        found = stored.load(eq, frozenset(), frozenset())
        if found is None:  # a source that is more than arithmetic on numpy's names
            assert eq.compiled_source()[1] is None or not eq.arguments()
            continue
        again, source, names, args = found
        assert (source, names) == eq.compiled_source() and args == eq.arguments()
        x = [10.0 ** rng.uniform(-3, 12, 4) for _ in args]  # magnitudes of all sizes, 4 points
        with np.errstate(all="ignore"):  # a log of a negative is NaN on both sides
            assert np.array_equal(again(*x), fn(*x), equal_nan=True)
        checked += 1
    assert checked > 50


def test_a_swept_function_comes_back_and_the_next_process_compiles_nothing(store, monkeypatch):
    eq = _fresh(get("cost_per_token"))  # compiled in this test's cache alone
    arrays = frozenset({"batch_size"})
    fn = eq.compiled(arrays=arrays)
    x = [np.geomspace(1, 1e4, 7) if s.name == "batch_size" else 1.7 for s in eq.arguments()]
    fresh = _fresh(eq)
    monkeypatch.setattr(core.sp, "lambdify", None)  # any compiling would fail
    monkeypatch.setattr(core, "pull_factors_out_of_max", None)
    assert fresh.arguments() == eq.arguments()
    with np.errstate(all="ignore"):  # every input 1.7: the experts' log(1 - k/E) is log(0)
        assert np.array_equal(fresh.compiled(arrays=arrays)(*x), fn(*x), equal_nan=True)


def test_a_changed_intermediate_or_kept_input_is_another_entry(store, monkeypatch):
    eq = get("cost_per_token")
    key = stored.closure_key(eq, frozenset())
    assert stored.closure_key(eq, frozenset({"step_time"})) != key
    step = core.defining("step_time")
    assert step is not None
    changed = dataclasses.replace(step, rhs=2 * step.rhs)
    monkeypatch.setitem(core._BY_OUTPUT, "step_time", changed)
    assert stored.closure_key(eq, frozenset()) != key
    monkeypatch.setitem(core._BY_OUTPUT, "step_time", step)
    assert stored.closure_key(eq, frozenset()) == key
    # an equation the expansion cannot reach changes nothing
    drain = core.defining("hbm_drain_time")
    monkeypatch.setitem(
        core._BY_OUTPUT, "hbm_drain_time", dataclasses.replace(drain, rhs=2 * drain.rhs)
    )
    assert stored.closure_key(eq, frozenset()) == key


def test_a_tampered_entry_is_refused_and_compiled_again(store, empty_cache, capsys, monkeypatch):
    monkeypatch.setattr(diskcache, "NOTED", set())  # each note is said once per process
    eq = _fresh(get("hbm_drain_time"))
    eq.compiled()
    for entry in _entries(empty_cache):
        entry.write_bytes(entry.read_bytes().replace(b"hbm_capacity", b"mem_bandwidth"))
    assert stored.load(eq, frozenset(), frozenset()) is None
    assert "damaged entry" in capsys.readouterr().err
    fresh = _fresh(eq)
    assert fresh.compiled()(3.35e12, 80e9) == pytest.approx(80e9 / 3.35e12)
    assert stored.load(eq, frozenset(), frozenset()) is not None  # rewritten


def test_a_sealed_entry_that_is_more_than_arithmetic_never_runs(store):
    eq = get("hbm_drain_time")
    evil = "def f(a, b):\n    return __import__('os').system('false')\n"
    entry = {"args": ["mem_bandwidth", "hbm_capacity"], "source": evil, "names": {}}
    store.put(stored._key(eq, frozenset(), frozenset()), json.dumps(entry).encode())
    assert stored.load(eq, frozenset(), frozenset()) is None


def test_arguments_in_another_order_are_a_miss(store):
    eq = _fresh(get("hbm_drain_time"))
    eq.compiled()
    key = stored._key(eq, frozenset(), frozenset())
    entry = json.loads(store.get(key))
    entry["args"].reverse()
    store.put(key, json.dumps(entry).encode())
    assert stored.load(eq, frozenset(), frozenset()) is None


def test_the_store_off_keeps_nothing(store, empty_cache, monkeypatch):
    monkeypatch.setenv("CHALKBOARD_CACHE", "0")
    _fresh(get("hbm_drain_time")).compiled()
    assert _entries(empty_cache) == []


@pytest.fixture
def facts(empty_cache):
    stored._facts.cache_clear()  # the store's folder is read from the (test's) cache root
    yield empty_cache
    stored._facts.cache_clear()


def _fact_entries(root):
    return sorted(p for p in (root / diskcache.FOLDER / "equation-facts").rglob("*") if p.is_file())


def test_expanded_form_and_evaluable_come_back_without_sympy(facts, monkeypatch):
    eqs = [e for e in CATALOGUE.values() if e.uses][:8] + [get("feistel_inverse")]
    made = [(stored.expanded_latex(e), stored.evaluable(e), stored.positive(e)) for e in eqs]
    assert made == [
        (core.to_latex(e.expanded()), _fresh(e).evaluable, bool(e.expanded().is_positive))
        for e in eqs
    ]
    assert made[-1][1] is False  # a Feistel round's f is an arbitrary function
    assert {m[2] for m in made} == {True, False}  # both answers kept

    def no_sympy(*a, **k):
        raise AssertionError("expanded again")

    monkeypatch.setattr(core.Equation, "expanded", no_sympy)
    again = [(stored.expanded_latex(e), stored.evaluable(e), stored.positive(e)) for e in eqs]
    assert again == made


def test_a_changed_intermediate_expands_again(facts, monkeypatch):
    eq = get("cost_per_token")
    before = stored.expanded_latex(eq)
    step = core.defining("step_time")
    monkeypatch.setitem(core._BY_OUTPUT, "step_time", dataclasses.replace(step, rhs=2 * step.rhs))
    after = stored.expanded_latex(eq)
    assert after != before and after == core.to_latex(eq.expanded())


def test_a_tampered_fact_is_refused_and_found_again(facts, capsys, monkeypatch):
    monkeypatch.setattr(diskcache, "NOTED", set())
    eq = get("feistel_inverse")
    assert stored.evaluable(eq) is False
    (entry,) = _fact_entries(facts)
    entry.write_bytes(entry.read_bytes().replace(b"false", b"true!"))
    calls = []
    real = core.Equation.expanded
    monkeypatch.setattr(core.Equation, "expanded", lambda *a: calls.append(1) or real(*a))
    assert stored.evaluable(eq) is False and calls
    assert "damaged entry" in capsys.readouterr().err


def test_a_display_form_is_proved_once_and_a_wrong_one_never_kept(facts, monkeypatch):
    from derivations.derivation import DerivationError

    eq = get("pipeline_bubble_fraction")
    p, m = (core.lookup_symbol(n).sym for n in ("pipeline_stages", "microbatches"))
    right = dataclasses.replace(eq, written=(p - 1) / (p - 1 + m))
    wrong = dataclasses.replace(eq, written=(p - 1) / m)
    proofs = []
    real = core.shown
    monkeypatch.setattr(core, "shown", lambda e: proofs.append(1) or real(e))
    right.check_display()
    dataclasses.replace(right).check_display()
    assert len(proofs) == 1  # the second is the first's record
    for _ in range(2):
        with pytest.raises(DerivationError, match="display form"):
            wrong.check_display()
    assert len(proofs) == 3


# -- display forms and solutions kept as expression data --------------------------------------


@pytest.fixture
def expressions(empty_cache):
    stored._expressions.cache_clear()  # the store's folder is read from the (test's) cache root
    yield empty_cache
    stored._expressions.cache_clear()


def _expression_entries(root):
    return sorted(p for p in (root / diskcache.FOLDER / "expressions").rglob("*") if p.is_file())


def test_every_catalogue_expression_comes_back_as_the_same_tree():
    kept = 0
    for eq in CATALOGUE.values():
        for expr in (eq.rhs, core.readable(eq.rhs), eq.expanded()):
            data = stored.expression_data(expr)
            if data is None:  # an arbitrary function (a Feistel round's f): never stored
                assert expr.atoms(core.sp.core.function.AppliedUndef)
                continue
            again = stored.expression_from(json.loads(json.dumps(data)))
            assert again == expr and core.sp.srepr(again) == core.sp.srepr(expr)
            kept += 1
    assert kept > 250


@pytest.mark.parametrize(
    "data",
    [
        ["s", "no_such_symbol"],
        ["Function", ["s", "batch_size"]],  # a head outside the list: nothing is looked up
        ["__import__", ["n", 1, 1]],
        ["n", 1, 0],
        ["n", 1.5, 1],
        ["n", "1", "2"],
        ["Add"],
        "batch_size",
        [],
    ],
)
def test_data_that_is_not_a_stored_expression_is_refused(data):
    with pytest.raises(stored.NotAnExpression):
        stored.expression_from(data)


def test_a_symbol_that_is_not_the_catalogue_s_own_is_never_stored():
    other = core.sp.Symbol("batch_size")  # no assumptions: not the catalogue's batch_size
    assert stored.expression_data(other + 1) is None
    assert stored.expression_data(core.sp.Float(1.5) * core.lookup_symbol("batch_size").sym) is None


def test_a_display_form_comes_back_without_factoring(expressions, monkeypatch):
    eqs = [e for e in CATALOGUE.values() if e.written is None][:20]
    made = [_fresh(e).display_expr for e in eqs]
    assert made == [core.readable(e.rhs) for e in eqs]
    monkeypatch.setattr(core, "readable", None)  # any factoring would fail
    assert [_fresh(e).display_expr for e in eqs] == made


def test_a_changed_right_side_is_factored_again(expressions, monkeypatch):
    eq = get("pipeline_bubble_fraction")
    assert _fresh(eq).display_expr == core.readable(eq.rhs)
    changed = dataclasses.replace(eq, rhs=2 * eq.rhs)
    assert changed.display_expr == core.readable(2 * eq.rhs) != _fresh(eq).display_expr


def test_a_solution_comes_back_without_solving(expressions, monkeypatch):
    pairs = [("pipeline_bubble_fraction", "microbatches"), ("memory_per_gpu", "micro_batch")]
    made = [get(a).solve_for(b).rhs for a, b in pairs]
    monkeypatch.setattr(core.sp, "solve", None)  # any solving would fail
    assert [get(a).solve_for(b).rhs for a, b in pairs] == made
    assert len(_expression_entries(expressions)) == 2


def test_a_changed_equation_is_solved_again(expressions):
    eq = get("hbm_drain_time")
    first = eq.solve_for("mem_bandwidth").rhs
    doubled = dataclasses.replace(eq, rhs=2 * eq.rhs)
    assert doubled.solve_for("mem_bandwidth").rhs == 2 * first


def test_a_tampered_solution_is_refused_and_solved_again(expressions, capsys, monkeypatch):
    monkeypatch.setattr(diskcache, "NOTED", set())
    eq = get("hbm_drain_time")
    right = eq.solve_for("mem_bandwidth").rhs
    (entry,) = _expression_entries(expressions)
    entry.write_bytes(entry.read_bytes().replace(b"hbm_capacity", b"hbm_drain_time"))
    assert eq.solve_for("mem_bandwidth").rhs == right
    assert "damaged entry" in capsys.readouterr().err


# -- LaTeX kept as text ---------------------------------------------------------------------


@pytest.fixture
def printed(empty_cache):
    stored._latex_store.cache_clear()  # the store's folder is read from the (test's) cache root
    yield empty_cache
    stored._latex_store.cache_clear()


def test_latex_comes_back_without_printing(printed, monkeypatch):
    eqs = list(CATALOGUE.values())[:15]
    made = [(e.latex(), e.display_latex()) for e in eqs]
    monkeypatch.setattr(core, "_Printer", None)  # any printing would fail
    monkeypatch.setattr(core, "_ReadablePrinter", None)
    assert [(e.latex(), e.display_latex()) for e in eqs] == made


def test_a_symbol_s_new_latex_is_printed_again(printed, monkeypatch):
    eq = get("hbm_drain_time")
    before = eq.latex()
    capacity = core.SYMBOLS["hbm_capacity"]
    monkeypatch.setitem(core.SYMBOLS, "hbm_capacity", dataclasses.replace(capacity, latex="M_X"))
    after = eq.latex()
    assert "M_X" in after and after != before
    monkeypatch.setitem(core.SYMBOLS, "hbm_capacity", capacity)
    assert eq.latex() == before


def test_tampered_latex_is_refused_and_printed_again(printed, capsys, monkeypatch):
    monkeypatch.setattr(diskcache, "NOTED", set())
    eq = get("hbm_drain_time")
    right = eq.latex()
    for entry in (p for p in (printed / diskcache.FOLDER / "latex").rglob("*") if p.is_file()):
        entry.write_bytes(entry.read_bytes().replace(b"frac", b"sqrt"))
    assert eq.latex() == right
    assert "damaged entry" in capsys.readouterr().err


def test_a_renamed_symbol_is_printed_anew(store, monkeypatch):
    """Reader-moe32, card fault: the penalty's LaTeX became kappa, but the card's written-out
    line kept the stored pi, because the closure key holds sympy names, not LaTeX names."""
    eq = get("alltoall_time")
    assert r"\kappa" in stored.expanded_latex(eq)
    penalty = core.SYMBOLS["scale_out_penalty"]
    monkeypatch.setitem(
        core.SYMBOLS, "scale_out_penalty", dataclasses.replace(penalty, latex=r"\pi")
    )
    text = stored.expanded_latex(eq)
    assert r"\pi" in text and r"\kappa" not in text
