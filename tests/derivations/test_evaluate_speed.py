"""The evaluation path's caches give what the uncached path gives, and know when to recompute.

Conversions with cached factors (units.registry.convert, to_base), cached unit parsing, values
read from presets memoised per choice of presets (Resolver.quantity), the symbols an evaluation
may read (inputs.reachable) and to_latex's tables kept per version of the notation and catalogue.
"""

import dataclasses
from decimal import Decimal
from pathlib import Path

import numpy as np
import pint
import pytest
from hypothesis import given
from hypothesis import strategies as st

from derivations import core, get, to_latex
from derivations import inputs as inputs_module
from derivations.inputs import reachable
from tests.strategies import log_uniform
from units import Q_, ChalkboardError, parse_unit
from units.presets import load
from units.registry import convert, new_quantity, to_base

UNITS = ["TB/s", "GB", "byte", "ms", "s", "hour", "minute", "USD/chip/hour", "token/s", "chip"]
UNITS += ["Mtoken", "FLOP/s", "PFLOP/s", "USD/Mtoken", "sequence", "dimensionless", "byte/value"]


PINT_TO = pint.UnitRegistry.Quantity.to


def same(a: pint.Quantity, b: pint.Quantity) -> bool:
    """Equal units, and magnitudes equal in value and type (an int stays an int)."""
    if a._units != b._units or type(a.magnitude) is not type(b.magnitude):
        return False
    return np.array_equal(a.magnitude, b.magnitude)


def test_convert_gives_what_pint_gives():
    for source in UNITS:
        for magnitude in (3.35, 2, np.float64(0.5), np.array([1.0, 2.5])):
            q = Q_(magnitude, source)
            assert same(to_base(q), q.to_base_units())
            for target in UNITS:
                unit = parse_unit(target)
                try:
                    want = PINT_TO(q, unit)  # pint's own conversion, not the registry's direct one
                except pint.DimensionalityError as err:
                    with pytest.raises(pint.DimensionalityError) as got:
                        convert(q, unit)
                    assert str(got.value) == str(err)
                    continue
                for _ in range(2):  # the first call works out the factor, the second reads it
                    assert same(convert(q, unit), want), (q, target)
                    assert same(q.to(unit), want) and same(q.to(target), want), (q, target)


def test_convert_leaves_other_magnitudes_to_pint():
    q = Q_(Decimal("1.5"), "GB")
    assert convert(q, parse_unit("byte")) == q.to("byte")
    assert type(convert(q, parse_unit("byte")).magnitude) is Decimal


@given(log_uniform(low=1e-30, high=1e30), st.sampled_from(UNITS), st.sampled_from(UNITS))
def test_convert_is_pint_on_any_value(x, source, target):
    q = Q_(x, source)
    if q.dimensionality == Q_(1, target).dimensionality:
        assert same(convert(q, parse_unit(target)), PINT_TO(q, parse_unit(target)))
        assert same(q.to(target), PINT_TO(q, target))


def test_new_quantity_is_the_quantity_pint_builds():
    units = parse_unit("TB/s")._units
    made, want = new_quantity(2.5, units), Q_(2.5, units)
    assert type(made) is type(want) and vars(made) == vars(want) and made == want


def test_parse_unit_errors_every_time_and_results_are_equal():
    assert parse_unit("TB/s") == parse_unit("TB/s") == Q_(1, "TB/s").units
    for _ in range(2):
        with pytest.raises(ChalkboardError, match="unknown unit in 'furlongs'"):
            parse_unit("furlongs")


def test_a_memoised_evaluation_equals_a_fresh_one():
    kw = dict(hardware="b200", model="deepseek_v3", precision="fp8", batch_size=64)
    eq = get("cost_per_token")
    inputs_module._READS.clear()
    first = eq.evaluate_detailed(**kw)
    again = eq.evaluate_detailed(**kw)
    assert same(first.value, again.value)
    assert list(first.inputs) == list(again.inputs)  # the same inputs in the same order
    for name, i in first.inputs.items():
        j = again.inputs[name]
        assert same(i.base, j.base) and (i.origin, i.source, i.symbol) == (
            j.origin,
            j.source,
            j.symbol,
        )
        assert i.base is not j.base  # a new Quantity each time


def test_changing_a_returned_input_in_place_changes_no_later_evaluation():
    eq = get("hbm_drain_time")
    r = eq.evaluate_detailed(hardware="h100_sxm")
    r.inputs["mem_bandwidth"].base.ito("TB/s")  # a caller's business, not the memo's
    assert eq.evaluate(hardware="h100_sxm") == r.value
    again = eq.evaluate_detailed(hardware="h100_sxm").inputs["mem_bandwidth"].base
    assert again.units == parse_unit("byte/s")


def _chip_file(path, bandwidth: str):
    path.write_text(
        "[hardware.test_chip]\n"
        'name = "Test chip"\nsource = "a test"\n'
        f'hbm_capacity = "80 GB"\nhbm_bandwidth = "{bandwidth}"\n'
    )
    return path


def test_memoised_preset_reads_follow_the_presets_loaded(tmp_path):
    # 80 GB / 2 TB/s = 40 ms; 80 GB / 4 TB/s = 20 ms: two files give one id two figures
    slow = load(extra=[_chip_file(tmp_path / "slow.toml", "2 TB/s")])
    fast = load(extra=[_chip_file(tmp_path / "fast.toml", "4 TB/s")])
    eq = get("hbm_drain_time")
    for _ in range(2):
        assert eq.evaluate(hardware="test_chip", presets=slow).to("ms").magnitude == 40
        assert eq.evaluate(hardware="test_chip", presets=fast).to("ms").magnitude == 20
    chip = fast.get("hardware", "test_chip")  # a Preset passed as itself
    assert eq.evaluate(hardware=chip, presets=slow).to("ms").magnitude == 20


def test_memoised_preset_reads_follow_a_changed_constant(monkeypatch):
    eq = get("training_flops")  # 2 FLOP per parameter per token (a constant) x N x D
    case = dict(model="deepseek_v3")
    before = eq.evaluate(**case)
    constant = core.SYMBOLS["flops_per_param_token"]
    doubled = dataclasses.replace(constant, value=2 * constant.value)
    monkeypatch.setitem(core.SYMBOLS, "flops_per_param_token", doubled)
    assert eq.evaluate(**case) == 2 * before
    monkeypatch.undo()
    assert eq.evaluate(**case) == before


def test_reachable_follows_the_catalogue(monkeypatch):
    eq = get("hbm_drain_time")
    assert "flops" not in reachable(eq)
    # mem_bandwidth defined by an equation of flops: its inputs become reachable
    fake = core.Equation(
        id="fake_bandwidth",
        title="a test",
        lhs=core.lookup_symbol("mem_bandwidth"),
        rhs=core.lookup_symbol("flops").sym / core.lookup_symbol("ridge_intensity").sym,
        chapter="batching",
        source=core.Source("a test"),
    )
    monkeypatch.setitem(core._BY_OUTPUT, "mem_bandwidth", fake)
    assert "flops" in reachable(eq)
    monkeypatch.undo()
    assert "flops" not in reachable(eq)
    reads = reachable(eq)
    reads["x"] = None  # the caller's own copy
    assert "x" not in reachable(eq)


def test_to_latex_follows_the_notation(monkeypatch):
    sym = core.lookup_symbol("mem_bandwidth")
    assert to_latex(sym.sym) == "W"
    monkeypatch.setitem(core.SYMBOLS, sym.name, dataclasses.replace(sym, latex="W_{x}"))
    assert to_latex(sym.sym) == "W_{x}"
    monkeypatch.undo()
    assert to_latex(sym.sym) == "W"


def test_errors_stay_the_same_when_repeated():
    eq = get("crossover_batch")
    for _ in range(2):
        with pytest.raises(ChalkboardError, match="no dense fp8 FLOP/s figure"):
            eq.evaluate(hardware="a100_sxm", model="deepseek_v3", precision="fp8")
        with pytest.raises(ChalkboardError, match="expected a quantity of"):
            eq.evaluate(hardware="h100_sxm", model="deepseek_v3", mem_bandwidth="80 GB")


def test_the_sparse_gcd_shortcut_gives_sympys_gcd():
    import sympy as sp

    from derivations.core import _gcd

    a, b, c, d = sp.symbols("a b c d", positive=True)
    cases = [
        (a * b + c, a * c),  # coprime: the shortcut
        (a * b + a * c, 2 * a**2),  # a common factor: sympy's own answer
        (2 * a, 4 * b),  # a common integer content
        (a / b + c, c / b),  # rational functions
        (sp.Rational(1, 2) * a, sp.Rational(3, 4) * a * b),  # rational coefficients
        (sp.exp(a) * b + c, b * d),  # a non-polynomial generator
        (sp.sqrt(2), 2 * sp.sqrt(2)),  # sympy's algebraic-number special case
        (a + sp.sqrt(2), a),  # a domain other than ZZ or QQ
    ]
    for f, g in cases:
        assert _gcd(f, g) == sp.gcd(f, g), (f, g)
    # the arguments of every max and min in the catalogue that has few symbols (the large ones
    # are the reason for the shortcut, and take sympy a second each)
    for eq in core.CATALOGUE.values():
        for m in eq.expanded().atoms(sp.Max, sp.Min):
            args = [sp.factor_terms(sp.together(x)) for x in m.args]
            if len(m.free_symbols) <= 8:
                assert _gcd(*args[:2]) == sp.gcd(*args[:2]), m


def test_a_memoised_value_is_the_value_computed_again():
    eq = get("cost_per_token")
    case = dict(hardware="b200", model="deepseek_v3", batch_size=64)
    inputs_module._VALUES.clear()
    first = eq.evaluate(**case)
    again = eq.evaluate(**case)
    assert same(first, again) and first is not again  # a new Quantity each time
    first.ito("USD/token")  # a caller's business, not the memo's
    assert same(eq.evaluate(**case), again)
    inputs_module._VALUES.clear()
    assert same(eq.evaluate(**case), again)


def test_the_memo_tells_apart_what_changes_a_value():
    eq = get("hbm_drain_time")
    case = dict(hardware="h100_sxm")
    for capacity in ("80 GB", Q_(80, "GB"), Q_(80.0, "GB"), Q_(80, "GB").to("byte"), 80e9):
        key = inputs_module.evaluation_key(eq, load(), case, {"hbm_capacity": capacity})
        assert key is not None
    keys = {
        inputs_module.evaluation_key(eq, load(), case, {"hbm_capacity": c})[0]
        for c in (Q_(80, "GB"), Q_(80.0, "GB"), Q_(80, "GiB"), Q_(81, "GB"), "80 GB")
    }
    assert len(keys) == 5  # an int stays an int, and units are kept
    minus, plus = (
        inputs_module.evaluation_key(eq, load(), case, {"routed_weight_share": v})[0]
        for v in (-0.0, 0.0)
    )
    assert minus != plus
    # a short sweep is keyed by its values (dtype, shape and bytes); a long one, or a list, not
    sweeps = [np.array([80.0, 96.0]), np.array([80.0, 97.0]), np.array([[80.0, 96.0]])]
    sweeps += [np.array([80, 96]), np.array([-0.0, 96.0]), np.array([0.0, 96.0])]
    keys = {
        inputs_module.evaluation_key(eq, load(), case, {"hbm_capacity": Q_(a, "GB")})[0]
        for a in sweeps
    }
    assert len(keys) == len(sweeps)
    long = Q_(np.arange(1.0, inputs_module.SWEEP_SIZE + 2), "GB")
    assert inputs_module.evaluation_key(eq, load(), case, {"hbm_capacity": long}) is None
    assert inputs_module.evaluation_key(eq, load(), case, {"hbm_capacity": [80, 96]}) is None
    for q in (Q_(80, "GB"), Q_(96, "GB"), Q_(80, "GB")):
        want = Q_(q.to("byte").magnitude / 3.35e12, "s").to("ms").magnitude
        got = eq.evaluate(**case, hbm_capacity=q).to("ms").magnitude
        assert got == pytest.approx(want, rel=1e-12)  # 80 GB / 3.35 TB/s, by hand


def test_a_memoised_value_notes_the_presets_it_read():
    from units import reads

    eq = get("crossover_batch")
    case = dict(hardware="h100_sxm", model="deepseek_v3")
    inputs_module._VALUES.clear()
    with reads.recording() as computed:
        eq.evaluate(**case)
    with reads.recording() as recalled:
        eq.evaluate(**case)
    assert ("hardware", "h100_sxm", "hbm_bandwidth") in recalled
    assert computed <= recalled


def _forget_memos():
    """Empty every memo of the evaluation path (what a fresh process starts with)."""
    for memo in ("_VALUES", "_SWEEPS", "_READS", "_PARSED", "_PARSED_SWEEPS", "_CHOSEN"):
        getattr(inputs_module, memo).clear()


def _outcome(eq, kw, detailed):
    """What an evaluation gives (a value, or every input with its origin, in order; or its
    error), what derivations.recording records and which preset fields it reads."""
    from derivations import recording
    from units import reads

    with recording() as made, reads.recording() as read:
        try:
            got = eq.evaluate_detailed(**kw) if detailed else eq.evaluate(**kw)
        except ChalkboardError as err:
            got = str(err)
    if not isinstance(got, str) and detailed:
        inputs = [
            (n, i.base._units, np.asarray(i.base.magnitude).tolist(), i.origin, i.source)
            for n, i in got.inputs.items()
        ]
        got = (got.value, inputs)
    if isinstance(got, pint.Quantity):
        got = (got._units, np.asarray(got.magnitude).tolist(), type(got.magnitude))
    elif not isinstance(got, str):
        got = ((got[0]._units, np.asarray(got[0].magnitude).tolist()), got[1])
    recorded = [
        (e.equation.id, sorted(e.keywords), np.asarray(e.value.magnitude).tolist()) for e in made
    ]
    return got, recorded, frozenset(read)


EXAMPLE = load(extra=[Path(__file__).parents[1] / "fixtures" / "example_presets.toml"])
CASES = [
    dict(hardware="h100_sxm", model="deepseek_v3"),
    dict(hardware="b200", model="llama_3_1_70b", precision="fp8", weight_precision="fp4"),
    dict(hardware="h100_sxm", model="deepseek_v3", batch_size=64, n_chips="16 chip"),
    dict(hardware="b200", model="deepseek_v3", batch_size=Q_(np.array([1.0, 64.0]), "sequence")),
    # a user's file: a model with no stated parameter counts (counted from its architecture)
    dict(hardware="example_chip", model="llama_3_2_1b", batch_size=64, presets=EXAMPLE),
]


@pytest.mark.parametrize("detailed", [False, True])
def test_a_memo_hit_gives_records_and_reads_what_a_miss_does(detailed, monkeypatch):
    # every evaluable equation of the catalogue on a few cases: each evaluated with the memos
    # empty and nested equations (and bindings that evaluate equations) evaluated in place, as
    # they were before they were memoised; then with the memos empty, then again (a hit), then
    # after every other equation (its nested evaluations found in the memo of values read per
    # choice of presets)
    eqs = [e for e in core.CATALOGUE.values() if e.evaluable]
    in_place = inputs_module.Resolver.value_of
    for kw in CASES:
        _outcome(eqs[0], kw, detailed)  # a model's counts are cross-checked once per process
        cold = {}
        for eq in eqs:
            _forget_memos()
            with monkeypatch.context() as m:
                m.setattr(inputs_module.Resolver, "nested", in_place)
                m.setattr(inputs_module.Resolver, "_by", lambda self, name: None)
                cold[eq.id] = _outcome(eq, kw, detailed)
            _forget_memos()
            assert _outcome(eq, kw, detailed) == cold[eq.id], (eq.id, kw)
            assert _outcome(eq, kw, detailed) == cold[eq.id], (eq.id, kw)
        for eq in reversed(eqs):
            assert _outcome(eq, kw, detailed) == cold[eq.id], (eq.id, kw)


def test_a_memoised_sweep_is_a_new_array_each_time():
    eq = get("hbm_drain_time")
    capacity = np.array([80.0, 96.0])
    _forget_memos()
    first = eq.evaluate(hardware="h100_sxm", hbm_capacity=Q_(capacity, "GB"))
    again = eq.evaluate(hardware="h100_sxm", hbm_capacity=Q_(capacity, "GB"))
    assert same(first, again) and first.magnitude is not again.magnitude
    first.magnitude[:] = 0  # a caller's business, not the memo's
    capacity[0] = 160.0  # the caller's sweep changed in place: a new case
    third = eq.evaluate(hardware="h100_sxm", hbm_capacity=Q_(capacity, "GB"))
    # 160 GB / 3.35 TB/s and 96 GB / 3.35 TB/s in ms, by hand
    assert third.to("ms").magnitude == pytest.approx([160 / 3.35, 96 / 3.35], rel=1e-12)
    fourth = eq.evaluate(hardware="h100_sxm", hbm_capacity=Q_(np.array([80.0, 96.0]), "GB"))
    assert same(fourth, again)
    detailed = eq.evaluate_detailed(hardware="h100_sxm", hbm_capacity=Q_(capacity, "GB"))
    detailed.inputs["hbm_capacity"].base.magnitude[:] = 1.0
    again = eq.evaluate_detailed(hardware="h100_sxm", hbm_capacity=Q_(capacity, "GB"))
    assert again.inputs["hbm_capacity"].base.magnitude.tolist() == [160e9, 96e9]


def _model_file(path, kv_heads: int):
    path.write_text(
        "[model.test_model]\n"
        'name = "Test model"\nsource = "a test"\nattention = "gqa"\n'
        "layers = 16\nd_model = 2048\nn_heads = 32\n"
        f"n_kv_heads = {kv_heads}\nhead_dim = 64\nd_ff = 8192\nvocab = 128256\n"
        "tied_embeddings = true\n"
    )
    return path


def test_an_edited_user_preset_is_never_stale(tmp_path):
    # serve reloads the same file after an edit: a new Presets, so no memo answers for it.
    # KV values per token = 2 (K and V) x layers x KV heads x head dim: 2 x 16 x 8 x 64 = 16,384
    # with 8 KV heads, 32,768 with 16 (by hand); read through the GQA equation (a nested one)
    from units.presets import _load

    path = _model_file(tmp_path / "mine.toml", kv_heads=8)
    eq = get("kv_bytes_per_token")  # bf16: two bytes a value
    for expected_heads in (8, 16, 8):
        _model_file(path, kv_heads=expected_heads)
        _load.cache_clear()  # what serve does when a preset file changes
        presets = load(extra=[path])
        want = 2 * 16 * expected_heads * 64 * 2
        for _ in range(2):
            got = eq.evaluate(model="test_model", presets=presets).to("byte/token")
            assert got.magnitude == pytest.approx(want, rel=1e-12)
            detail = eq.evaluate_detailed(model="test_model", presets=presets)
            assert detail.inputs["n_kv_heads"].base.magnitude == expected_heads
    _load.cache_clear()


def test_an_override_reaching_a_nested_equation_is_not_answered_from_the_memo():
    # kv_values_per_token is read through the GQA or MLA equation (a nested evaluation); an
    # override of one of that equation's inputs must reach it, memo or not
    eq = get("kv_bytes_per_token")
    case = dict(hardware="h100_sxm", model="llama_3_1_70b")
    plain = eq.evaluate(**case)
    layers = eq.evaluate_detailed(**case).inputs["n_layers"].base.magnitude
    doubled = eq.evaluate(**case, n_layers=Q_(2 * layers, "layer"))
    assert (doubled / plain).to("").magnitude == pytest.approx(2, rel=1e-12)
    assert same(eq.evaluate(**case), plain)


def test_the_store_of_sweeps_keeps_to_its_budget(monkeypatch):
    # each entry of hbm_drain_time on a sweep of 100 capacities holds the key's array and the
    # value's (800 bytes each): a budget of 10 kB keeps at most six, and every value stays
    # right (capacity / 3.35 TB/s, by hand)
    monkeypatch.setattr(inputs_module, "_SWEEPS_BYTES", 10_000)
    _forget_memos()
    eq = get("hbm_drain_time")
    for _ in range(2):
        for k in range(10):
            capacity = np.arange(1.0, 101.0) + k
            got = eq.evaluate(hardware="h100_sxm", hbm_capacity=Q_(capacity, "GB"))
            assert got.to("s").magnitude == pytest.approx(capacity * 1e9 / 3.35e12, rel=1e-12)
            assert 0 < len(inputs_module._SWEEPS) <= 10_000 // 1600
            assert inputs_module._sweeps_held[0] <= 10_000
