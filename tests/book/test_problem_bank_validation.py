"""Gates of single validation problems, computed independently of the problem files (from the
figures as the statement prints them) over many seeds."""

import re
from functools import cache

from book.checker import answer_spec, check
from book.problem_bank.validation import offline_share_of_bound, predict_from_a_sibling
from book.problems import authored
from units.presets import load

SEEDS = range(30)
SCALE = {"TFLOP/s": 1e12, "PFLOP/s": 1e15}


@cache
def presets():
    return load()


def _rates(text: str) -> list[float]:
    """Every FLOP rate the statement prints, in FLOP/s, in order."""
    return [
        float(x.replace(",", "")) * SCALE[u] for x, u in re.findall(r"([\d,.]+) ([TP]FLOP/s)", text)
    ]


def test_predict_from_a_sibling_scales_the_siblings_rate_by_the_flop_rates():
    """Reader 18 (issue 21): the old problem was offline_share_of_bound's calculation on another
    chip, and its batch dropped out unremarked. Now both steps are compute-bound, so a token
    costs the same FLOPs on both chips and, at the same share, the rates stand as the FLOP
    rates: from the printed figures, the sibling's rate times this chip's FLOP rate over the
    sibling's. The sibling's own rate is graded wrong."""
    for seed in SEEDS:
        p = authored(predict_from_a_sibling, seed, presets())
        t, where = p.text, f"seed {seed}"
        known = float(re.search(r"served ([\d,]+) tokens per second", t)[1].replace(",", ""))
        sibling_flops, flops = _rates(t)
        expected = known * flops / sibling_flops
        assert abs(p.answer.to("token/s/chip").m / expected - 1) < 0.005, where
        spec = answer_spec(p)
        assert check(f"{expected:.3g} tokens per second per chip", spec)["ok"], where
        assert not check(f"{known:.4g} tokens per second per chip", spec)["ok"], where


def test_offline_share_of_bound_says_when_the_batch_cancels():
    """Reader 18 (issue 21): the step is compute-bound, yet the solution let the batch seem to
    matter. When the multiplies bind, the bound is the FLOP rate over 2N(1 + prompt/output) per
    output token, whatever the batch (by hand from the printed figures), and the solution says
    the batch cancels."""
    for seed in SEEDS:
        p = authored(offline_share_of_bound, seed, presets())
        t, where = p.text, f"seed {seed}"
        solution = " ".join(p.solution)
        if "compute-bound" not in solution:
            continue
        assert "batch cancels" in solution, where
        n = float(re.search(r"\(([\d.]+) B parameters, dense", t)[1]) * 1e9
        measured = float(re.search(r"at ([\d,]+) tokens per second", t)[1].replace(",", ""))
        out = float(re.search(r"averaged ([\d,]+) tokens of output", t)[1].replace(",", ""))
        prompt = float(re.search(r"and ([\d,]+) tokens of prompt", t)[1].replace(",", ""))
        (flops,) = _rates(t)
        bound = flops / (2 * n * (1 + prompt / out))
        assert abs(p.answer.to("").m / (measured / bound) - 1) < 0.005, where
