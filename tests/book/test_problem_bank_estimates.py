"""Gates of the two re-authored estimates of issue 21 (reader 16: P10 and P20), computed
independently of the problem files from the figures the statement prints and the lecture's
rules of thumb (6 FLOP per parameter per token for training, 20 Chinchilla tokens per
parameter), over many seeds."""

import re
from functools import cache

from book.checker import answer_spec, check
from book.problem_bank.overtraining import estimate_pretraining_compute
from book.problem_bank.validation import training_days
from book.problems import authored
from tests.book.printed import figure
from units.presets import load

SEEDS = range(40)


@cache
def presets():
    return load()


NUMBER = r"([\d.,]+(?: × 10[⁰¹²³⁴⁵⁶⁷⁸⁹]+)?)"


def _active(text: str) -> float:
    """Active parameters, in parameters, from '(… B parameters, dense)' or '… active'."""
    found = re.search(NUMBER + r" B parameters active per token", text) or re.search(
        r"\(" + NUMBER + r" B parameters", text
    )
    return figure(found.group(1)) * 1e9


def test_the_compute_optimal_model_of_a_reservation_is_the_square_root_of_c_over_120():
    """C = GPUs × sustained rate × time; a Chinchilla model of N' parameters spends
    6 × N' × 20 N', so N' = √(C / 120): the answer from the printed figures. A forward-only
    budget (2N, the lesson's slip, √3 larger) is graded wrong (reader 26: the old problem's
    6 N D cancelled the 6, so the slip went untested)."""
    for seed in SEEDS:
        p = authored(estimate_pretraining_compute, seed, presets())
        gpus = figure(re.search(r"reserves " + NUMBER + " ", p.text).group(1))
        days = figure(re.search(r"for " + NUMBER + " days", p.text).group(1))
        rate = re.search(NUMBER + r" ([TP])FLOP/s of model FLOPs", p.text)
        flops = figure(rate.group(1)) * (1e12 if rate.group(2) == "T" else 1e15)
        budget = gpus * flops * days * 86400
        expected = (budget / (6 * 20)) ** 0.5 / 1e9  # billions of parameters
        assert abs(p.answer.to("Gparameter").m / expected - 1) < 0.01, (seed, expected)
        spec = answer_spec(p)
        assert check(f"{expected:.3g} B parameters", spec)["ok"], seed
        forward_only = (budget / (2 * 20)) ** 0.5 / 1e9
        assert not check(f"{forward_only:.3g} B parameters", spec)["ok"], seed


def test_training_days_come_from_chinchilla_tokens_6nd_and_the_comparable_mfu():
    """Days = 6 N (20 N k) / (chips × peak × MFU), from the printed figures; timing at peak is
    graded wrong. An MoE is planned only from DeepSeek-V3's MoE run, a dense model only from
    dense runs (the lecture's warning about carrying an MFU across)."""
    for seed in SEEDS:
        p = authored(training_days, seed, presets())
        t = p.text
        n = _active(t)
        times = figure(re.search(r"over-trained " + NUMBER + " times", t).group(1))
        chips = figure(re.search(r"on " + NUMBER + r" [A-Z]", t).group(1))
        flops = re.search(NUMBER + r" ([TP])FLOP/s dense each", t)
        peak = figure(flops.group(1)) * (1e12 if flops.group(2) == "T" else 1e15)
        mfu = figure(re.search(NUMBER + r"% \(attention", t).group(1)) / 100
        days = 6 * n * 20 * n * times / (chips * peak * mfu) / 86400
        assert abs(p.answer.to("day").m / days - 1) < 0.01, (seed, days)
        spec = answer_spec(p)
        assert check(f"{days:.3g} days", spec)["ok"], seed
        assert not check(f"{days * mfu:.3g} days", spec)["ok"], seed
        planned_moe = "active per token" in t.split("A comparable run")[0]
        assert planned_moe == ("DeepSeek" in t), seed
