"""The over-training chapter's context and figures against hand computations.

Hand inputs: the lecture's 50M tokens/s for 2 months, 100B active, 20 tokens per parameter and
inefficiency 3 (lecture.md, section E; units/data/parameters.toml); the two loss-law fits
(units/data/scaling_laws.toml: Hoffmann et al. 2022 approach 3, Besiroglu et al. 2024);
DeepSeek-V3's 14.8T tokens, 37B active, 2.664M chip-hours (its README) and the H100's dense
BF16 989.4 TFLOP/s (facts.md).
"""

import numpy as np
import pytest

from book.chapters import overtraining
from book.figures import FIGURES
from units import Q_
from units.presets import load

MONTH = 30.4375 * 86400  # pint's month: a twelfth of a Julian year, in seconds
SERVED = 50e6 * 2 * MONTH  # tokens served: 2.63e14
N0 = 100e9
FITS = {  # E, A, B, alpha, beta
    "hoffmann_2022": (1.69, 406.4, 410.7, 0.34, 0.28),
    "epoch_2024": (1.8172, 482.01, 2085.43, 0.3478, 0.3658),
}


@pytest.fixture(scope="module")
def ctx():
    return overtraining.context(load())


def test_the_lecture_chain(ctx):
    assert ctx["chain"]["d_inf"] == "2.63 × 10¹⁴ tokens"  # 5e7 * 2 * 30.4375 * 86400
    assert ctx["overtraining"] == "131.5"  # 2.6298e14 / (20 * 1e11)
    assert ctx["chain"]["rumour_factor"] == "75"  # 150e12 / 2e12
    # pre-training over serving compute for the rumour: 6 * 150e12 / (2 * 3 * 2.6298e14)
    assert ctx["chain"]["rumour_share"] == "0.5704"
    # equal cost: 6 N D_pre = 2 N D_inf 3 = 3 N D_RL 3, all 6e11 * 2.6298e14 = 1.578e26 FLOP
    assert ctx["chain"]["c_pre"] == ctx["chain"]["c_inf"] == ctx["chain"]["c_rl"]
    assert ctx["chain"]["c_pre"] == "1.578 × 10²⁶ FLOP"


def _line_tokens(fit):
    """D* on the fit's compute-optimal line at N = N0, by hand: N* = G (C/6)^(b/(a+b))."""
    _, A, B, a, b = FITS[fit]
    g = (a * A / (b * B)) ** (1 / (a + b))
    c6 = (N0 / g) ** ((a + b) / b)  # C / 6
    return c6 / N0


@pytest.mark.parametrize("k, fit", list(enumerate(FITS)))
def test_distance_to_each_fit_s_line(ctx, k, fit):
    factor = SERVED / _line_tokens(fit)
    assert float(ctx["against_fits"][k]["factor"]) == pytest.approx(factor, rel=1e-3)
    # issue 12: the Hoffmann line puts the model about 22x above it, not 131.5x
    assert (22 < factor < 23) if fit == "hoffmann_2022" else (140 < factor < 150)


def _cheapest_share(fit):
    """Brute force with plain numpy: along the iso-loss curve of (N0, SERVED), minimise
    6 N D + 2 * 3 * N * SERVED; return training over serving compute at the minimum."""
    E, A, B, a, b = FITS[fit]
    loss = E + A / N0**a + B / SERVED**b
    n = np.geomspace(N0 / 3, N0 * 3, 200_001)
    rest = loss - E - A / n**a
    d = np.where(rest > 0, (B / np.where(rest > 0, rest, 1)) ** (1 / b), np.inf)
    total = 6 * n * d + 6 * n * SERVED
    i = int(np.argmin(total))
    # the Lagrange condition at a minimum: train / serve = b B/D^b / (a A/N^a - b B/D^b)
    lagrange = (b * B / d[i] ** b) / (a * A / n[i] ** a - b * B / d[i] ** b)
    return d[i] / SERVED, lagrange


@pytest.mark.parametrize("k, fit", list(enumerate(FITS)))
def test_equal_cost_is_a_heuristic(ctx, k, fit):
    share, lagrange = _cheapest_share(fit)
    assert share == pytest.approx(lagrange, rel=1e-3)
    assert ctx["against_fits"][k]["train_share_value"] == pytest.approx(share, rel=1e-3)
    # issue 12: about 0.8 under Hoffmann, about 0.35 under Epoch
    assert ctx["against_fits"][k]["train_share"] == ("0.83" if k == 0 else "0.35")


def test_iso_loss_tokens_reach_the_loss():
    p = load()
    sizes = np.array([8e10, 1e11, 2e11])
    n0, d0 = Q_(N0, "parameter"), Q_(SERVED, "token")
    tokens, train, serve = overtraining.iso_loss_costs(p, "hoffmann_2022", n0, d0, d0, sizes)
    E, A, B, a, b = FITS["hoffmann_2022"]
    target = E + A / N0**a + B / SERVED**b
    assert E + A / sizes**a + B / tokens**b == pytest.approx(np.full(3, target), rel=1e-9)
    assert train == pytest.approx(6 * sizes * tokens)
    assert serve == pytest.approx(2 * 3 * sizes * SERVED)


def test_mfu_read_backwards(ctx):
    flops = 6 * 37e9 * 14.8e12  # 3.286e24
    mfu = flops / (2.664e6 * 3600 * 989.4e12)
    assert float(ctx["timed"]["mfu_bf16"]) == pytest.approx(mfu, rel=1e-3)  # 0.3463
    assert float(ctx["frontier_run"]["mfu"]) == pytest.approx(mfu, rel=1e-3)
    # the frontier run on DeepSeek's 2,048 chips at that MFU: 6e11 * 2.6298e14 FLOP
    seconds = 6 * N0 * SERVED / (2048 * 989.4e12 * mfu)
    assert ctx["frontier_run"]["years"] == f"{seconds / (365.25 * 86400):.4g} years"


def test_chinchilla_caption_shows_both_counts():
    # a caption says its figures as prose does (units/display.py: spoken_number). By hand: 2.6298e14
    # tokens served over 20 tokens per parameter x 100e9 parameters = 131.49; 22.26 against the fit
    fig = FIGURES["chinchilla_contours"](load())
    assert "131 times" in fig.caption and "22 times" in fig.caption


def test_equal_cost_figure_agrees_with_the_context(ctx):
    fig = FIGURES["equal_cost_heuristic"](load())
    for f in ctx["against_fits"]:
        assert f"{f['train_share']} under the {f['name']}" in fig.caption
        assert f"{f['excess']} per cent" in fig.caption
