"""Gates of single pipeline problems, computed independently of the problem files (from the
figures as the statement prints them) over many seeds."""

import math
import re
from functools import cache

from book.checker import answer_spec, check
from book.problem_bank.pipeline import node_or_rack
from book.problems import authored
from units.presets import load

SEEDS = range(60)


@cache
def presets():
    return load()


def test_node_or_rack_rejects_no_hops_and_whole_hbm_on_every_draw():
    """The winning node's time is all its weights over one node's bandwidth plus a hop per
    stage; leaving out the hops, or filling each GPU's whole HBM (fewer stages, so fewer hops),
    is rejected with its diagnosis on every draw (issue 21: at a 200 µs hop both were
    accepted)."""
    for seed in SEEDS:
        p = authored(node_or_rack, seed, presets())
        t, where = p.text, f"seed {seed}"
        size = re.search(r"\(([\d,.]+) ([BT]) parameters[ )]", t)  # "671 B", "1 T parameters"
        params = float(size.group(1).replace(",", "")) * {"B": 1e9, "T": 1e12}[size.group(2)]
        weights = params * (1 if "in FP8" in t else 2)  # bytes
        hop = float(re.search(r"hop between nodes costs ([\d.]+) ms", t).group(1)) * 1e-3
        name = presets().get("hardware", p.choices["hardware"]).name.replace(" (per GPU)", "")
        hbm, bandwidth = (
            float(x)
            for x in re.search(re.escape(name) + r": ([\d.]+) GB at ([\d.]+) TB/s", t).groups()
        )
        read = weights / (8 * bandwidth * 1e12)
        stages = math.ceil(weights / (8 * hbm * 1e9 / 2))
        assert stages == p.choices["pipeline_stages"] > 1, where
        # reader 14 (issue 21): "every weight is read" holds for an MoE only at a batch that
        # routes a token to every expert; the statement names one that leaves < 0.1% unread
        model = next(
            presets().get("model", m)
            for m, _ in node_or_rack.MODELS
            if presets().get("model", m).name in t
        )
        batch = int(re.search(r"Each step decodes (\d+) sequences", t).group(1))
        if model.get("experts_routed"):
            unread = (1 - model.experts_active / model.experts_routed) ** batch
            assert unread < 1e-3, f"{where}: {unread:.2%} of the experts unread"
            # reader 27 (P4): the statement gives the routing, not the verdict; the student
            # decides that every expert is read, and reading only the active ones is named
            assert "every weight" not in t and "nearly every" not in t, where
            routing = f"routed to {model.experts_active:g} of the {model.experts_routed:g}"
            assert routing in t, where
            assert any("active experts" in m.why for m in p.mistakes), where
        assert "hands the new token back to the first" in t, where  # why a hop per stage
        answer = read + stages * hop
        assert abs(p.answer.to("s").m / answer - 1) < 1e-9, where
        spec = answer_spec(p)
        assert check(f"{answer * 1e3:.4g} ms", spec)["ok"], where
        verdict = check(f"{read * 1e3:.4g} ms", spec)
        assert not verdict["ok"] and "hops" in verdict["message"], f"{where}: {verdict}"
        # probC (issue 21): the hops between stages only, the way back forgotten, is wrong too
        verdict = check(f"{(read + (stages - 1) * hop) * 1e3:.4g} ms", spec)
        assert not verdict["ok"], f"{where}: one hop fewer accepted"
        whole = math.ceil(weights / (8 * hbm * 1e9))  # the half-HBM rule ignored
        if whole < stages:
            greedy = read + (whole * hop if whole > 1 else 0)
            verdict = check(f"{greedy * 1e3:.4g} ms", spec)
            assert not verdict["ok"], f"{where}: {greedy * 1e3:.4g} ms accepted"
            assert "HBM" in verdict["message"] or "hops" in verdict["message"], where


def test_training_memory_per_gpu_counts_the_layer_being_recomputed():
    """Reader 14 (issue 21): the peak of full recomputation holds every layer's input and the
    internals of the one layer being recomputed (about 40 bytes per value for a gated layer), as
    the reversible chapter counts it; the old answer left that layer out and rejected a student who
    counted it. From the printed figures, on every draw: the answer includes it, and leaving it
    out is graded wrong with its diagnosis."""
    from book.problem_bank.pipeline import training_memory_per_gpu as problem

    for seed in range(100):
        p = authored(problem, seed, presets())
        t, where = p.text, f"seed {seed}"
        params = float(re.search(r"\(([\d,.]+) B parameters", t).group(1).replace(",", ""))
        layers = float(re.search(r"; (\d+) layers", t).group(1))
        d = float(re.search(r"residual width ([\d,]+)", t).group(1).replace(",", ""))
        shards = float(re.search(r"over (\d+) ", t).group(1))
        found = re.search(r"its own (one|\d+) sequences? of ([\d,]+) tokens", t)
        batch = 1 if found.group(1) == "one" else float(found.group(1))
        tokens = batch * float(found.group(2).replace(",", ""))
        internals = float(re.search(r"about ([\d.]+) bytes per value", t).group(1))
        state = 16 * params * 1e9 / shards  # 2 + 2 + 12 bytes per parameter, sharded
        inputs = layers * d * 2 * tokens  # every layer's BF16 input
        working = internals * d * tokens  # the layer being recomputed
        peak = (state + inputs + working) / 1e9  # GB
        assert abs(p.answer.to("GB").m / peak - 1) < 1e-3, f"{where}: {p.answer} vs {peak}"
        spec = answer_spec(p)
        assert check(f"{peak:.3g} GB", spec)["ok"], where
        verdict = check(f"{(state + inputs) / 1e9:.3g} GB", spec)
        assert not verdict["ok"] and "recomputed" in verdict["message"], f"{where}: {verdict}"
