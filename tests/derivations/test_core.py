"""The equation core: dimension checks at definition, LaTeX, compiled evaluation, solve_for."""

import importlib.util
import textwrap

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from derivations import CATALOGUE, DimensionError, Equation, Source, get, lookup_symbol
from derivations.core import register
from tests import strategies as st_
from units import Q_, ChalkboardError

B, W, N_t, b = (
    lookup_symbol(n).sym
    for n in ("batch_size", "mem_bandwidth", "n_total", "weight_bytes_per_value")
)


def make(rhs, lhs="memory_time", eq_id="wrong"):
    return Equation(eq_id, "test", lookup_symbol(lhs), rhs, "test", Source("test"))


def test_wrong_sum_names_equation_term_and_both_dimensions():
    with pytest.raises(DimensionError) as err:
        make(N_t * b / W + B)
    message = str(err.value)
    assert "equation 'wrong'" in message
    assert "'batch_size'" in message
    assert "[sequence]" in message and "[time]" in message  # batch_size counts sequences


def test_wrong_side_is_rejected():
    with pytest.raises(DimensionError, match=r"right side .* \[information\]"):
        make(N_t * b)


def test_max_of_mixed_dimensions_is_rejected():
    with pytest.raises(DimensionError, match="argument"):
        make(sp.Max(N_t * b / W, N_t * b))


def test_symbolic_power_of_a_dimensioned_symbol_is_rejected():
    alpha = lookup_symbol("loss_param_exponent").sym  # a dimensionless exponent
    with pytest.raises(DimensionError, match="non-numeric power"):
        make(W**alpha)


def test_a_count_as_an_exponent_is_rejected():
    # batch_size counts sequences: it cannot be an exponent
    with pytest.raises(DimensionError, match="exponent 'batch_size' must be dimensionless"):
        make(W**B)


def test_wrong_equation_fails_at_import(tmp_path):
    module = tmp_path / "my_wrong_chapter.py"
    module.write_text(
        textwrap.dedent("""
        from derivations import Equation, Source, lookup_symbol
        s = lookup_symbol
        # bug: compute time divided by bandwidth instead of FLOP/s
        Equation("compute_time_wrong", "wrong", s("compute_time"),
                 s("batch_size").sym * s("n_active").sym / s("mem_bandwidth").sym,
                 "test", Source("test"))
    """)
    )
    spec = importlib.util.spec_from_file_location("my_wrong_chapter", module)
    with pytest.raises(DimensionError, match="equation 'compute_time_wrong'"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


# -- issue 10: tokens and sequences are dimensions, so mixing them fails at definition ----------


def test_a_sum_that_mixes_tokens_and_sequences_names_the_term():
    # The KV term without the context length: B k is bytes per token times sequences, not bytes
    # (B L k is: L counts tokens per sequence). Before counts were dimensions this was accepted.
    k = lookup_symbol("kv_bytes_per_token").sym
    with pytest.raises(DimensionError) as err:
        make(N_t * b / W + B * k / W)
    message = str(err.value)
    assert "equation 'wrong'" in message
    # the offending term and its dimension are named
    assert (
        "'batch_size*kv_bytes_per_token/mem_bandwidth' has dimension [sequence] * [time] / [token]"
        in message
    )
    make(N_t * b / W + B * lookup_symbol("context_length").sym * k / W)  # with L it balances


def test_sequences_are_not_tokens_without_the_named_factor():
    # B sequences make u B tokens a step (u = 1 token per sequence): B alone is the wrong side
    u = lookup_symbol("decode_tokens_per_sequence").sym
    with pytest.raises(DimensionError, match=r"right side .*\[sequence\].*\[token\]"):
        make(B, lhs="tokens_per_step")
    make(u * B, lhs="tokens_per_step")


def test_an_equation_that_forgets_tokens_per_sequence_fails_at_import(tmp_path):
    module = tmp_path / "my_counts_chapter.py"
    module.write_text(
        textwrap.dedent("""
        from derivations import Equation, Source, lookup_symbol
        s = lookup_symbol
        # bug: rent per step over B sequences is a cost per sequence, not per token
        Equation("cost_per_sequence_wrong", "wrong", s("cost_per_token"),
                 s("n_chips").sym * s("price_per_chip_hour").sym * s("step_time").sym
                 / s("batch_size").sym,
                 "test", Source("test"))
    """)
    )
    spec = importlib.util.spec_from_file_location("my_counts_chapter", module)
    with pytest.raises(DimensionError, match=r"equation 'cost_per_sequence_wrong'.*\[sequence\]"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_every_registered_equation_passes_its_derivation():
    for eq in CATALOGUE.values():
        eq.check()


def test_latex_comes_from_declared_symbols():
    eq = get("crossover_batch")
    assert eq.latex().startswith("B^{*} =")
    assert r"N_{\mathrm{total}}" in eq.latex()
    assert eq._repr_latex_() == f"$${eq.latex()}$$"


def test_register_rejects_duplicate_ids_and_outputs():
    with pytest.raises(ChalkboardError, match="already registered"):
        register(make(N_t * b / W, lhs="weight_fetch_time", eq_id="compute_time"))
    with pytest.raises(ChalkboardError, match="already defined by"):
        register(make(N_t * b / W, lhs="weight_fetch_time", eq_id="another_weight_fetch"))


def test_unknown_equation_suggests_closest():
    with pytest.raises(ChalkboardError, match="did you mean 'crossover_batch'"):
        get("crossover")


@given(st_.machine_and_model(), st_.batch_size)
def test_compiled_evaluation_equals_sympy_substitution(inputs, batch):
    eq = get("step_time")
    inputs.pop("price_per_chip_hour")
    subs = {
        **inputs,
        "batch_size": batch,
        "flops_per_param_token": Q_(2, "FLOP/parameter/token"),
        "decode_tokens_per_sequence": Q_(1, "token/sequence"),  # the named hidden factor
        "vectors_per_token": Q_(1, "vector/token"),  # a token routes one vector
    }
    expr = eq.expanded(frozenset(subs))  # given inputs stay symbols, as the evaluation keeps them
    # Every symbol replaced at once, then sympy's own arithmetic: independent of the compiled
    # path (no lambdify, no factors pulled out of the max). `subs` would re-simplify each Max at
    # every partial substitution, 0.25 s an example for the same number.
    by_sympy = float(
        expr.xreplace(
            {lookup_symbol(k).sym: sp.Float(v.to_base_units().magnitude) for k, v in subs.items()}
        )
    )
    compiled = eq.evaluate(**inputs, batch_size=batch).to("s").magnitude
    assert compiled == pytest.approx(by_sympy, rel=1e-9)


def test_sweep_matches_pointwise_evaluation():
    eq = get("cost_per_token")
    batches = np.array([1.0, 7.0, 300.0, 5000.0])
    swept = eq.sweep("batch_size", batches, hardware="h100_sxm", model="deepseek_v3")
    for b_, value in zip(batches, swept.magnitude, strict=True):
        single = eq.evaluate(hardware="h100_sxm", model="deepseek_v3", batch_size=b_)
        assert value == pytest.approx(single.magnitude, rel=1e-12)


def test_solve_for_a_max_is_refused_with_the_branches():
    with pytest.raises(ChalkboardError, match="compute_time, memory_time"):
        get("step_time").solve_for("flops")


def test_solve_for_a_non_input_is_refused():
    with pytest.raises(ChalkboardError, match="not an input"):
        get("hbm_drain_time").solve_for("batch_size")


def test_solved_equation_carries_a_checked_derivation():
    solved = get("crossover_batch").solve_for("n_active")
    solved.check()
    assert solved.lhs.name == "n_active"
    assert lookup_symbol("crossover_batch").sym in solved.rhs.free_symbols


def test_count_symbols_are_the_things_one_counts():
    from derivations import SYMBOLS
    from units.registry import is_count

    marked = {name for name, s in SYMBOLS.items() if s.count}
    assert {"batch_size", "n_chips", "microbatches", "n_layers", "context_length"} <= marked
    assert not marked & {"step_time", "mem_bandwidth", "bubble_fraction", "crossover_batch"}
    assert all(is_count(SYMBOLS[n].unit) for n in marked)  # never a time, a rate or bytes


@given(
    st_.log_uniform(low=0.6, high=1e4),
    st_.log_uniform(low=1.0, high=1e6),
    st.integers(1, 500),
    st.booleans(),
)
def test_spaced_counts_are_whole_distinct_and_in_range(start, ratio, n, log):
    from derivations import spaced

    stop = start * ratio
    values = spaced("batch_size", start, stop, n, log=log)
    assert values.units == Q_(1, "sequence").units
    m = values.magnitude
    assert np.all(m == np.rint(m)) and len(set(m)) == len(m) <= n
    assert np.all(np.diff(m) > 0)
    assert m[0] == max(1, np.rint(start))
    if n > 1:  # one value is the start alone
        assert m[-1] == max(1, np.rint(stop))
    # a measure is spaced as asked
    widths = spaced("mem_bandwidth", "1 TB/s", "2 TB/s", n, log=log)
    assert len(widths) == n and widths.units == Q_(1, "TB/s").units


def test_spaced_rounds_a_scaled_count_in_its_own_unit():
    from derivations import spaced

    # n_total is shown in billions of parameters, whole in parameters: nothing to round here
    values = spaced("n_total", "1.5 Gparameter", "3 Gparameter", 2)
    assert list(values.magnitude) == [1.5, 3.0]
    with pytest.raises(ChalkboardError, match="whole number"):
        spaced("batch_size", 1, 10, 0)


def test_a_shown_form_that_differs_from_the_computed_one_is_refused():
    from derivations import DerivationError

    k, e = lookup_symbol("experts_active").sym, lookup_symbol("experts_routed").sym
    # u B tokens a step, one vector each: the routing draws, a pure number
    draws = (
        B * lookup_symbol("decode_tokens_per_sequence").sym * lookup_symbol("vectors_per_token").sym
    )
    miss = sp.exp(draws * sp.log(1 - k / sp.Max(e, 1)))
    where = ((sp.Max(e, 1), e),)
    share = lookup_symbol("expert_read_fraction")
    good = Equation(
        "shown_ok",
        "t",
        share,
        1 - miss,
        "t",
        Source("t"),
        display=((miss, (1 - k / e) ** draws, where),),
    )
    good.check()
    slip = Equation(
        "shown_slip",
        "t",
        share,
        1 - miss,
        "t",
        Source("t"),
        display=((miss, (1 - k / e) ** (2 * draws), where),),
    )
    with pytest.raises(DerivationError, match="the form shown"):
        slip.check()


def test_solve_through_a_symbolic_power_of_a_dimensional_constant():
    # L = E + A/N^a + B/(D/D0)^b solved for D: sympy's (D0^b ...)^(1/b) is regrouped as
    # D0 (...)^(1/b), which has a dimension; round trip through the loss it came from
    loss = get("chinchilla_loss")
    solved = loss.solve_for("training_tokens")
    kw = dict(model="llama_3_1_70b")
    tokens = solved.evaluate(**kw, loss=Q_(2.0, "dimensionless"))
    assert tokens.to("token").magnitude > 1e9
    back = loss.evaluate(**kw, training_tokens=tokens)
    assert back.to("dimensionless").magnitude == pytest.approx(2.0, rel=1e-9)
