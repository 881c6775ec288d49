"""Gates of single batching problems, computed independently of the problem files (from the
figures the statement prints) over many seeds."""

import math
import re
from functools import cache

from book.checker import answer_spec, check
from book.problem_bank.batching import fast_mode_cost, serve_70b_per_user_speed
from book.problems import authored
from units.presets import load


@cache
def presets():
    return load()


def _figure(pattern: str, text: str) -> float:
    return float(re.search(pattern, text).group(1).replace(",", ""))


def test_serve_70b_per_user_speed_is_capped_by_the_hbm_on_every_draw():
    """Long contexts: the HBM holds fewer caches than the speed target would allow, so the batch
    is the HBM's and its step, shorter than the target's, sets the price; no draw grades the
    same price as fast_mode_cost's (the chain that problem teaches)."""
    for seed in range(40):
        p = authored(serve_70b_per_user_speed, seed, presets())
        params = _figure(r"\(([\d.]+) B parameters\)", p.text) * 1e9
        hbm = _figure(r", ([\d,]+) GB of HBM", p.text) * 1e9
        bandwidth = _figure(r"HBM at ([\d.]+) TB/s", p.text) * 1e12
        rent = _figure(r"rented at ([\d.]+) USD per chip per hour", p.text)
        layers = _figure(r"has (\d+) layers", p.text)
        heads = _figure(r"caching (\d+) key-value heads", p.text)
        dim = _figure(r"of dimension (\d+)", p.text)
        context = _figure(r"carries ([\d,]+) tokens of context", p.text)
        rate = _figure(r"at least (\d+) tokens per second", p.text)
        cache_bytes = 2 * layers * heads * dim * 2 * context  # a key and a value, BF16
        weights = 2 * params
        read = 8 * bandwidth
        by_memory = math.floor((8 * hbm - weights) / cache_bytes)
        by_speed = math.floor((1 / rate - weights / read) / (cache_bytes / read))
        where = f"seed {seed}: {p.text[:70]}"
        assert by_memory < by_speed, where
        step = (weights + by_memory * cache_bytes) / read
        cost = 8 * rent / 3600 * step / by_memory * 1e6  # USD per million tokens
        assert abs(p.answer.to("USD/Mtoken").m / cost - 1) < 1e-3, where
        assert check(f"{cost:.3g} USD per million tokens", answer_spec(p))["ok"], where
        at_target = 8 * rent / 3600 / rate / by_memory * 1e6  # paying the whole allowed step
        assert not check(f"{at_target:.3g} USD per million tokens", answer_spec(p))["ok"], where
        other = authored(fast_mode_cost, seed, presets())
        assert abs((other.answer / p.answer).to("").m - 1) > 0.03, where
