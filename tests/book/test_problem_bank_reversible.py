"""Gates of single reversible problems, computed independently of the problem files (from the
figures as the statement prints them) over many seeds."""

import re
from functools import cache

from book.checker import answer_spec, check
from book.problem_bank.reversible import reversible_extra_days
from book.problems import authored
from units.presets import load

SEEDS = range(60)


@cache
def presets():
    return load()


def _figure(pattern: str, text: str) -> float:
    return float(re.search(pattern, text).group(1).replace(",", ""))


def test_reversible_run_needs_the_recompute_counted_on_every_draw():
    """The share of peak a reversible run must sustain is 8 N D (6 for forward and backward, 2
    for rebuilding every layer's input once) over GPUs × peak × deadline; counting 6 N D (the
    model's FLOPs alone) is rejected with its diagnosis on every draw."""
    for seed in SEEDS:
        p = authored(reversible_extra_days, seed, presets())
        t, where = p.text, f"seed {seed}"
        active = re.search(r"([\d,.]+) B parameters active", t) or re.search(
            r"\(([\d,.]+) B parameters\)", t
        )
        n = float(active.group(1).replace(",", "")) * 1e9
        mantissa, power = re.search(r"on ([\d.]+) × 10(\S+) tokens", t).groups()
        digits = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
        tokens = float(mantissa) * 10 ** int(power.translate(digits))
        days = _figure(r"within (\d+) days", t)
        gpus = _figure(r"on ([\d,]+) \S", t.split("days", 1)[1])
        peak = _figure(r"\(([\d,.]+) TFLOP/s dense at BF16\)", t) * 1e12
        available = gpus * peak * days * 86400
        needed = 8 * n * tokens / available
        assert abs(p.answer.to("").m / needed - 1) < 1e-3, f"{where}: {p.answer} vs {needed}"
        assert 0.3 <= needed <= 0.6, where
        spec = answer_spec(p)
        assert check(f"{100 * needed:.3g}%", spec)["ok"], where
        plain = 6 * n * tokens / available
        verdict = check(f"{100 * plain:.3g}%", spec)
        assert not verdict["ok"] and "rebuilds" in verdict["message"], f"{where}: {verdict}"
