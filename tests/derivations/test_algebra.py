"""Composition, input replacement, elasticities, grids and the dependency graph."""

import functools
import os
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from hypothesis import given

from derivations import DimensionError, Equation, Source, get, lookup_symbol
from derivations.algebra import dependency_graph
from tests import strategies as s
from units import Q_, ChalkboardError

H100_DS = dict(hardware="h100_sxm", model="deepseek_v3")


@functools.cache
def composed_cost_per_token():
    """Composed once: the composition takes no input, and checking its steps is the slow part."""
    return get("cost_per_token").compose(
        "step_time", "compute_time", "memory_time", "weight_fetch_time", "kv_fetch_time"
    )


@functools.cache
def _floor() -> Equation:
    """The cost at the crossover batch, composed once: the composition takes no input, and a
    fresh Equation would compile its function again for every example."""
    return (
        composed_cost_per_token()
        .replace_input(batch_size="crossover_batch")
        .compose("crossover_batch")
    )


@given(s.machine_and_model(), s.batch_size)
def test_composition_matches_substituting_numbers(inputs, batch):
    composed = composed_cost_per_token()
    assert composed.lhs.name == "cost_per_token"
    assert {"step_time", "compute_time"}.isdisjoint(str(f) for f in composed.rhs.free_symbols)
    kw = dict(inputs, batch_size=batch)
    # by hand: rent of n chips for the slower of compute and memory, over B tokens
    f, w = inputs["flops"].to("FLOP/s").m, inputs["mem_bandwidth"].to("byte/s").m
    n, b = inputs["n_chips"].m, inputs["weight_bytes_per_value"].to("byte/value").m
    length, a = inputs["context_length"].m, inputs["attention_flops_per_token"].to("FLOP/token").m
    compute = batch.m * (2 * inputs["n_active"].m + a * length) / (n * f)
    # an MoE reads its always-read share and the routed experts its batch touches
    e, k, share = (
        inputs["experts_routed"].m,
        inputs["experts_active"].m,
        inputs["routed_weight_share"].m,
    )
    touched = 1 - (1 - k / e) ** batch.m
    memory = (
        inputs["n_total"].m * (1 - share + share * touched) * b
        + batch.m * length * inputs["kv_bytes_per_token"].to("byte/token").m
    ) / (n * w)
    by_hand = n * inputs["price_per_chip_hour"].to("USD/chip/s").m * max(compute, memory) / batch.m
    assert composed.evaluate(**kw).to("USD/token").m == pytest.approx(by_hand, rel=1e-9)


def test_composition_records_checked_steps():
    floor = _floor()  # cost_per_token composed with the five times, at B*, composed with B*
    floor.check()
    assert len(floor.derivation.steps) == 8
    # at the crossover, cost = compute floor + KV share (hand algebra: memory = compute + KV)
    c_f, n_a, p, f = sp.symbols(
        "flops_per_param_token n_active price_per_chip_hour flops", positive=True
    )
    length, k, w = sp.symbols("context_length kv_bytes_per_token mem_bandwidth", positive=True)
    # in B*'s own limit: no attention FLOPs, and the batch touches every expert;
    # u = decode_tokens_per_sequence (1 token per sequence): the KV share is per token
    u = sp.Symbol("decode_tokens_per_sequence", positive=True)
    limit = floor.rhs.subs(
        {
            sp.Symbol("attention_flops_per_token", positive=True): 0,
            sp.Symbol("expert_read_fraction", positive=True): 1,
        }
    )
    assert sp.simplify(limit - (c_f * n_a * p / f + length * k * p / (u * w))) == 0
    direct = get("cost_per_token").evaluate(
        **H100_DS, n_chips=9, batch_size=get("crossover_batch").evaluate(**H100_DS)
    )
    # the composed form keeps the share of experts read as a symbol, read at B* (where it is 1
    # to within (1 - 8/256)^5356, about 1e-74) or given; the chip count has cancelled
    at_b_star = floor.evaluate(**H100_DS)
    assert at_b_star.m == pytest.approx(direct.m, rel=1e-12)
    assert floor.evaluate(**H100_DS, expert_read_fraction=1).m == pytest.approx(direct.m, rel=1e-12)


def test_composing_with_an_unused_equation_or_a_wrong_dimension_is_refused():
    with pytest.raises(ChalkboardError, match="not on its right side"):
        get("hbm_drain_time").compose("compute_time")
    with pytest.raises(ChalkboardError, match="cannot put"):
        get("cost_per_token").replace_input(batch_size="mem_bandwidth")


def test_a_user_equation_with_a_unit_error_is_rejected_naming_the_term():
    flops, bw = lookup_symbol("flops"), lookup_symbol("mem_bandwidth")
    with pytest.raises(DimensionError, match="term 'mem_bandwidth' has dimension"):
        Equation(
            id="user_slip",
            title="a slip",
            lhs=lookup_symbol("ridge_intensity"),
            rhs=flops.sym + bw.sym,
            chapter="mine",
            source=Source("test"),
        )


def test_a_user_equation_works_like_a_built_in_one():
    eq = Equation(
        id="user_ratio",
        title="Ridge, again",
        lhs=lookup_symbol("ridge_intensity"),
        rhs=lookup_symbol("flops").sym / lookup_symbol("mem_bandwidth").sym,
        chapter="mine",
        source=Source("test"),
    )
    assert eq.evaluate(hardware="h100_sxm") == get("ridge_intensity").evaluate(hardware="h100_sxm")
    assert str(eq.solve_for("flops").rhs) == "mem_bandwidth*ridge_intensity"
    assert "I^{*}" in eq.latex()


@given(s.batch_size, s.context_length)
def test_elasticities_match_finite_differences(batch, length):
    eq = get("cost_per_token")
    kw = dict(H100_DS, batch_size=batch, context_length=length)
    el = eq.elasticities(**kw)
    base = eq.evaluate(**kw).m
    for name, value in kw.items():
        if name in ("hardware", "model"):
            continue
        h = 1e-6
        bumped = eq.evaluate(**dict(kw, **{name: value * (1 + h)})).m
        numeric = (np.log(bumped) - np.log(base)) / np.log1p(h)
        assert el[name] == pytest.approx(numeric, abs=1e-4)


def test_elasticities_of_the_crossover_batch_are_plus_and_minus_one():
    el = get("crossover_batch").elasticities(**H100_DS)
    assert el["flops"] == pytest.approx(1) and el["mem_bandwidth"] == pytest.approx(-1)
    assert el["n_total"] == pytest.approx(1) and el["n_active"] == pytest.approx(-1)
    assert list(el) == sorted(el, key=lambda k: -abs(el[k]))


def test_grid_matches_pointwise_evaluation():
    eq = get("cost_per_token")
    xs, ys = [1.0, 64.0, 4096.0], [1024.0, 131072.0]
    table = eq.grid(("batch_size", xs), ("context_length", ys), **H100_DS)
    assert table.shape == (2, 3)
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            one = eq.evaluate(**H100_DS, batch_size=x, context_length=Q_(y, "token/sequence"))
            assert table[i, j].to("USD/token").m == pytest.approx(one.to("USD/token").m)


def test_dependency_graph_and_used_by():
    graph = dependency_graph()
    assert "compute_time" in graph["step_time"] and "memory_time" in graph["step_time"]
    assert get("step_time") in get("compute_time").used_by
    assert get("crossover_batch") in get("micro_batch_size").uses


INLINED = ("step_time", "compute_time", "memory_time", "weight_fetch_time", "kv_fetch_time")


@functools.cache
def _unsimplified(replace_batch: bool) -> Equation:
    """The composed cost by plain substitution, never simplified (as compose built it before)."""
    rhs = get("cost_per_token").rhs
    for name in INLINED:
        rhs = rhs.subs(get(name).lhs.sym, get(name).rhs)
    if replace_batch:
        rhs = rhs.subs(lookup_symbol("batch_size").sym, get("crossover_batch").rhs)
    cost = get("cost_per_token")
    return Equation(f"raw_cost_{int(replace_batch)}", "raw", cost.lhs, rhs, "mine", Source("test"))


@given(s.machine_and_model(), s.batch_size, s.log_uniform(low=1e-3, high=1.0))
def test_simplified_closed_forms_equal_the_unsimplified_ones(inputs, batch, read):
    composed, floor = composed_cost_per_token(), _floor()
    assert len(floor.rhs.args) < len(_unsimplified(True).rhs.args) or floor.rhs.count_ops() < (
        _unsimplified(True).rhs.count_ops()
    )
    # the share of experts read is given, so both forms read the same number
    kw = dict(inputs, expert_read_fraction=Q_(read, "dimensionless"))
    for simple, raw, extra in (
        (composed, _unsimplified(False), {"batch_size": batch}),
        (floor, _unsimplified(True), {}),
    ):
        want = raw.evaluate(**kw, **extra).to("USD/token").m
        assert simple.evaluate(**kw, **extra).to("USD/token").m == pytest.approx(want, rel=1e-9)


def test_composed_ids_are_short_stable_and_unique():
    a = get("cost_per_token").compose("step_time")
    b = get("cost_per_token").compose("step_time", "compute_time")
    c = b.replace_input(batch_size="crossover_batch")
    d = get("cost_per_token").replace_input(batch_size="fast_batch_size")
    ids = [e.id for e in (a, b, c, d)]
    assert all(len(i) <= 40 and i.isidentifier() for i in ids), ids
    assert len(set(ids)) == len(ids)
    assert c.id.startswith("cost_per_token_at_crossover_batch_")
    assert get("cost_per_token").compose("step_time").id == a.id  # the same equation, the same id
    # the same id in a fresh interpreter with another hash seed
    code = (
        "from derivations import get; "
        "print(get('cost_per_token').compose('step_time', 'compute_time')"
        ".replace_input(batch_size='crossover_batch').id)"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == c.id, out.stderr


def test_a_replaced_input_cannot_be_given_and_a_cancelled_one_is_unused():
    floor = composed_cost_per_token().replace_input(batch_size="crossover_batch")
    at = dict(hardware="h100_sxm", model="deepseek_v3")
    with pytest.raises(ChalkboardError, match="replaced by crossover_batch"):
        floor.evaluate(**at, batch_size=64)
    assert "n_chips" in floor.cancelled
    assert floor.evaluate(**at, n_chips=9) == floor.evaluate(**at, n_chips=90)
