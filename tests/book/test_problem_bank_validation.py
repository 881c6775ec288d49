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


BYTES = {"FP4": 0.5, "FP8": 1, "BF16": 2}  # bytes per value of each precision the text names
UNITS = {"GB": 1e9, "TB/s": 1e12, "kB": 1e3}


def _number(x: str) -> float:
    return float(x.replace(",", ""))


def test_predict_from_a_sibling_chains_the_siblings_share_into_this_chips_bound():
    """Reader 26: the old problem was one multiplication (the sibling's rate times the FLOP
    rates). Now the sibling's published run is compute-bound and the predicted chip, capped at
    a small batch, is memory-bound: by hand from the printed figures, the sibling's bound (its
    batch the HBM's room or the test's cap; the step the slower of the reads and the multiplies,
    prefill included), its share, and this chip's bound at its cap times that share. The
    sibling's rate scaled by the FLOP rates, the one-multiplication answer, is graded wrong."""
    for seed in SEEDS:
        p = authored(predict_from_a_sibling, seed, presets())
        t, where = p.text, f"seed {seed}"
        known = _number(re.search(r"served ([\d,]+) tokens per second", t)[1])
        sibling_flops, flops = _rates(t)
        (c1, w1), (c2, w2) = [
            (_number(c) * UNITS["GB"], _number(w) * UNITS["TB/s"])
            for c, w in re.findall(r"([\d,.]+) GB of HBM at ([\d.]+) TB/s", t)
        ]
        allowed, cap = (_number(x) for x in re.findall(r"up to ([\d,]+) sequences at once", t))
        n = _number(re.search(r"\(([\d.]+) B parameters, dense", t)[1]) * 1e9
        per_token = _number(re.search(r"cache of ([\d.]+) kB per token", t)[1]) * UNITS["kB"]
        weight_bytes = BYTES[re.search(r"weights in (\w+)", t)[1]]
        prompt = _number(re.search(r"about ([\d,]+) tokens in", t)[1])
        out = _number(re.search(r"and ([\d,]+) tokens out", t)[1])
        cache = per_token * (prompt + out / 2)  # bytes per sequence, at the mean context
        weights = n * weight_bytes
        per_token_flops = 2 * n * (1 + prompt / out)  # itself and its prompt's prefill

        fit = (0.9 * c1 - weights) // cache
        rows = ((min(fit, allowed), sibling_flops, w1), (cap, flops, w2))
        sibling, bound = (  # sequences per step over the slower of multiplies and reads
            b / max(b * per_token_flops / f, (weights + b * cache) / w) for b, f, w in rows
        )
        expected = known / sibling * bound
        assert abs(p.answer.to("token/s/chip").m / expected - 1) < 0.01, where
        spec = answer_spec(p)
        assert check(f"{expected:.3g} tokens per second per chip", spec)["ok"], where
        shortcut = known * flops / sibling_flops
        assert not check(f"{shortcut:.4g} tokens per second per chip", spec)["ok"], where


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
