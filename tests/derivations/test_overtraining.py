"""Chapter E: training compute, equal costs, Chinchilla and the loss law."""

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from derivations import get
from tests import strategies as s
from units import Q_

tokens = s.quantity(low=1e9, high=1e15, unit="token")
budget = s.quantity(low=1e20, high=1e28, unit="FLOP")


@given(s.n_total, tokens)
def test_training_flops_is_six_n_d(n, d):
    got = get("training_flops").evaluate(n_active=n, training_tokens=d).to("FLOP").m
    assert got == pytest.approx(6 * n.m * d.m)


def test_kimi_training_flops_by_hand():
    # 6 x 32e9 active x 15.5e12 tokens
    got = get("training_flops").evaluate(model="kimi_k2").to("FLOP").m
    assert got == pytest.approx(6 * 32e9 * 15.5e12)


@given(s.quantity(low=1e10, high=1e60, unit="FLOP**2"))
def test_equal_cost_optimum_beats_its_neighbours(product):
    a_star = get("equal_cost_optimum").evaluate(cost_product=product).to("FLOP").m
    k = product.to("FLOP**2").m

    def total(a):
        return a + k / a

    assert a_star == pytest.approx(k**0.5)
    assert total(a_star) <= total(a_star * 1.01) and total(a_star) <= total(a_star / 1.01)


def test_equal_cost_second_derivative_is_positive():
    a, K = sp.symbols("cost_a cost_product", positive=True)
    assert sp.diff(a + K / a, a, 2).subs(a, sp.sqrt(K)).is_positive


def test_flashcard_ratios_by_hand():
    # 6 D_pre = 3 D_RL x 3 = 2 D_inf x 3
    assert get("pretrain_rl_token_ratio").evaluate().m == pytest.approx(9 / 6)
    assert get("pretrain_inference_token_ratio").evaluate().m == pytest.approx(6 / 6)


@given(tokens, s.n_total)
def test_equal_cost_ratios_make_costs_equal(d_pre, n):
    r_rl = get("pretrain_rl_token_ratio").evaluate().m
    r_inf = get("pretrain_inference_token_ratio").evaluate().m
    pre = get("training_flops").evaluate(n_active=n, training_tokens=d_pre)
    rl = get("rl_flops").evaluate(n_active=n, rl_tokens=d_pre / r_rl)
    inf = get("inference_flops").evaluate(n_active=n, inference_tokens=d_pre / r_inf)
    assert rl.to("FLOP").m == pytest.approx(pre.to("FLOP").m)
    assert inf.to("FLOP").m == pytest.approx(pre.to("FLOP").m)


def test_lecture_chain_by_hand():
    # 50e6 tokens/s x 2 months (2 x 365.25 / 12 days); Chinchilla 20 x 100e9
    served = 50e6 * 2 * 365.25 / 12 * 86400
    assert get("inference_tokens").evaluate().to("token").m == pytest.approx(served)
    factor = get("balanced_overtraining_factor").evaluate(n_active="100e9 parameter").m
    assert factor == pytest.approx(served / (20 * 100e9))


def test_kimi_overtraining_by_hand():
    assert get("overtraining_factor").evaluate(model="kimi_k2").m == pytest.approx(
        15.5e12 / (20 * 32e9)
    )


@given(s.n_total, tokens)
def test_loss_falls_with_parameters_and_data_toward_e(n, d):
    eq = get("chinchilla_loss")
    here = eq.evaluate(n_active=n, training_tokens=d).m
    assert eq.evaluate(n_active=n * 2, training_tokens=d).m < here
    assert eq.evaluate(n_active=n, training_tokens=d * 2).m < here
    assert here > 1.69


def test_loss_by_hand_for_both_fits():
    n, d = 70e9, 1.4e12
    hoffmann = 1.69 + 406.4 / n**0.34 + 410.7 / d**0.28
    epoch = 1.8172 + 482.01 / n**0.3478 + 2085.43 / d**0.3658
    kw = dict(n_active=Q_(n, "parameter"), training_tokens=Q_(d, "token"))
    assert get("chinchilla_loss").evaluate(**kw).m == pytest.approx(hoffmann)
    assert get("chinchilla_loss").evaluate(fit="epoch_2024", **kw).m == pytest.approx(epoch)


@given(budget)
def test_compute_optimum_beats_brute_force_search(c):
    for fit in ("hoffmann_2022", "epoch_2024"):
        n_star = get("compute_optimal_params").evaluate(training_flops=c, fit=fit).to("parameter").m
        d_star = get("compute_optimal_tokens").evaluate(training_flops=c, fit=fit).to("token").m
        assert 6 * n_star * d_star == pytest.approx(c.to("FLOP").m)

        def loss(n, fit=fit):
            kw = dict(n_active=Q_(n, "parameter"), training_tokens=Q_(c.m / (6 * n), "token"))
            return get("chinchilla_loss").evaluate(fit=fit, **kw).m

        best = loss(n_star)
        for step in (0.8, 0.95, 1.05, 1.25):
            assert best <= loss(n_star * step) + 1e-12


def test_epoch_fit_recovers_about_twenty_tokens_per_parameter():
    c = Q_(5.76e23, "FLOP")  # Chinchilla's budget: 6 x 70e9 x 1.4e12
    n = get("compute_optimal_params").evaluate(training_flops=c, fit="epoch_2024")
    d = get("compute_optimal_tokens").evaluate(training_flops=c, fit="epoch_2024")
    assert 10 < (d / n).to("token/parameter").m < 40


@given(s.log_uniform(low=1, high=20), tokens)
def test_balanced_tokens_scale_with_inference_inefficiency(eta, served):
    got = get("balanced_training_tokens").evaluate(
        inference_inefficiency=eta, inference_tokens=served
    )
    assert got.to("token").m == pytest.approx(eta / 3 * served.to("token").m)


@given(s.n_total)
def test_chinchilla_tokens_are_twenty_per_parameter(n):
    assert get("chinchilla_tokens").evaluate(n_active=n).to("token").m == pytest.approx(20 * n.m)


def test_a_wrong_optimum_fails_its_derivation():
    import dataclasses

    from derivations import Derivation, DerivationError
    from derivations.derivation import rename, solve

    eq = get("compute_optimal_params")
    a, b = sp.symbols("loss_param_exponent loss_data_exponent", positive=True)
    wrong = eq.rhs.subs({a: b, b: a}, simultaneous=True)  # exponents swapped
    steps = list(eq.derivation.steps)
    steps[-2] = solve(sp.Symbol("n_active", positive=True), wrong, "a slip")
    steps[-1] = rename(steps[-1].relation.lhs, wrong, "name it")
    bad = dataclasses.replace(eq, rhs=wrong, derivation=Derivation(*steps))
    with pytest.raises(DerivationError, match="a slip"):
        bad.check()


# -- training time and MFU ---------------------------------------------------------------------

DEEPSEEK_HOURS = Q_(2.664e6, "chip*hour")  # DeepSeek-V3 README: 2.664M H800 GPU-hours


def test_mfu_from_deepseek_chip_hours_by_hand():
    # 6 x 37e9 x 14.8e12 FLOP over 2.664e6 h x 3600 s x 1978.9e12 FLOP/s (H100 FP8 dense,
    # facts.md; the H800 has the H100's compute) = 0.1731.
    q = get("training_mfu").evaluate(
        model="deepseek_v3",
        hardware="h100_sxm",
        precision="fp8",
        training_chip_hours=DEEPSEEK_HOURS,
    )
    assert q.m == pytest.approx(6 * 37e9 * 14.8e12 / (2.664e6 * 3600 * 1978.9e12))


@given(
    st.sampled_from(["deepseek_v3", "kimi_k2"]),
    s.n_chips,
    st.floats(0.05, 0.8),
    s.hardware_with_flops,
)
def test_training_time_round_trips_through_chip_hours(model, chips, mfu, hardware):
    kw = dict(model=model, hardware=hardware)
    t = get("training_time").evaluate(training_chips=chips, mfu=mfu, **kw)
    hours = (t * chips).to("chip*hour")
    back = get("training_mfu").evaluate(training_chip_hours=hours, **kw)
    assert back.m == pytest.approx(mfu, rel=1e-9)


def test_training_time_halves_with_twice_the_chips():
    kw = dict(model="deepseek_v3", hardware="h100_sxm", mfu=0.4)
    one = get("training_time").evaluate(training_chips=Q_(1024, "chip"), **kw)
    two = get("training_time").evaluate(training_chips=Q_(2048, "chip"), **kw)
    assert (one / two).to("").m == pytest.approx(2)
