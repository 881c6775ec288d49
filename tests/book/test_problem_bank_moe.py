"""Gates of single MoE problems, computed independently of the problem files (from the figures
as the statement prints them) over many seeds."""

import re
from functools import cache

from book.checker import answer_spec, check
from book.problem_bank.moe import largest_model_at_its_crossover
from book.problems import authored
from units.presets import load

SEEDS = range(60)


@cache
def presets():
    return load()


def _figure(pattern: str, text: str) -> float:
    return float(re.search(pattern, text).group(1).replace(",", ""))


def test_largest_model_runs_compute_bound_with_its_caches_read_on_every_draw():
    """At the answer's batch a decode step's multiplies take as long as all its reads, the
    weights (one FP8 byte each) and every sequence's cache, and the weights and caches just
    fill the share of HBM the engine fills (issue 21: the solution once balanced the multiplies
    against the weights alone). The batch that ignores the caches' reads is rejected with its
    diagnosis."""
    for seed in SEEDS:
        p = authored(largest_model_at_its_crossover, seed, presets())
        t = p.text
        active = _figure(r"has ([\d.]+) B parameters active", t) * 1e9
        kv = _figure(r"takes ([\d.]+) kB per token", t) * 1e3
        chips = _figure(r"rack of (\d+) chips", t)
        # the engine fills the share of HBM the statement gives (reader 20: a plan filling
        # 99.8% of HBM is not a deployment)
        usable = _figure(r"fills at most (\d+)% of each GPU's HBM", t) / 100
        hbm = usable * chips * _figure(r"([\d.]+) GB of HBM", t) * 1e9
        bandwidth = chips * _figure(r"at ([\d.]+) TB/s", t) * 1e12
        flops = chips * _figure(r"([\d.]+) PFLOP/s of dense", t) * 1e15
        context = _figure(r"with ([\d,]+) tokens of context", t)
        # one sequence's cache; gpt-oss's sliding-window layers (as many as its full-attention
        # layers, reader 17) hold as much per token for the last window of tokens
        window = re.search(r"hold as much per token, but only for each sequence's last (\d+)", t)
        cache_bytes = (context + (float(window.group(1)) if window else 0)) * kv
        # compute = weight reads + cache reads: B 2 N_a / F = N / W + B L kv / W, for N
        per_param = 1 / bandwidth / (2 * active / flops - cache_bytes / bandwidth)  # batch / N
        total = hbm / (1 + per_param * cache_bytes)  # N bytes of weights + B caches = HBM
        batch = per_param * total
        multiplies = batch * 2 * active / flops
        reads = total / bandwidth + batch * cache_bytes / bandwidth
        where = f"seed {seed}: {t[:60]}"
        assert abs(p.answer.to("param").m / total - 1) < p.tolerance / 3, where
        assert abs(multiplies / reads - 1) < 1e-9, where  # the physics of the answer
        # at the graded answer the step is balanced within the tolerance
        at = p.answer.to("param").m
        b = per_param * at
        assert abs(
            (b * 2 * active / flops) / (at / bandwidth + b * cache_bytes / bandwidth) - 1
        ) < (p.tolerance), where
        blind_batch_per_param = flops / (2 * active * bandwidth)  # multiplies = weight reads
        blind = hbm / (1 + blind_batch_per_param * cache_bytes)
        blind_step = (blind + blind_batch_per_param * blind * cache_bytes) / bandwidth
        assert blind_step > 1.05 * (blind_batch_per_param * blind * 2 * active / flops), where
        verdict = check(f"{blind / 1e12:.3g} T parameters", answer_spec(p))
        assert not verdict["ok"], f"{where}: the caches-blind {blind / 1e12:.3g} T accepted"
        assert "cache" in verdict["message"], f"{where}: {verdict['message']}"
        assert check(f"{total / 1e12:.3g} T parameters", answer_spec(p))["ok"], where
        if window:  # the full-attention layers alone: graded wrong, and told why
            full = context * kv
            batch_per_param = 1 / bandwidth / (2 * active / flops - full / bandwidth)
            short = hbm / (1 + batch_per_param * full)
            verdict = check(f"{short / 1e12:.3g} T parameters", answer_spec(p))
            assert not verdict["ok"] and "sliding-window" in verdict["message"], where
