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
        size = re.search(r"\(([\d,.]+) ([BT]) parameters\)", t)  # "671 B", "1 T parameters"
        params = float(size.group(1).replace(",", "")) * {"B": 1e9, "T": 1e12}[size.group(2)]
        weights = params * (1 if "in FP8" in t else 2)  # bytes
        hop = float(re.search(r"a hop costs ([\d.]+) ms", t).group(1)) * 1e-3
        name = presets().get("hardware", p.choices["hardware"]).name.replace(" (per GPU)", "")
        hbm, bandwidth = (
            float(x)
            for x in re.search(re.escape(name) + r": ([\d.]+) GB at ([\d.]+) TB/s", t).groups()
        )
        read = weights / (8 * bandwidth * 1e12)
        stages = math.ceil(weights / (8 * hbm * 1e9 / 2))
        assert stages == p.choices["pipeline_stages"] > 1, where
        answer = read + stages * hop
        assert abs(p.answer.to("s").m / answer - 1) < 1e-9, where
        spec = answer_spec(p)
        assert check(f"{answer * 1e3:.4g} ms", spec)["ok"], where
        verdict = check(f"{read * 1e3:.4g} ms", spec)
        assert not verdict["ok"] and "hops" in verdict["message"], f"{where}: {verdict}"
        whole = math.ceil(weights / (8 * hbm * 1e9))  # the half-HBM rule ignored
        if whole < stages:
            greedy = read + (whole * hop if whole > 1 else 0)
            verdict = check(f"{greedy * 1e3:.4g} ms", spec)
            assert not verdict["ok"], f"{where}: {greedy * 1e3:.4g} ms accepted"
            assert "HBM" in verdict["message"] or "hops" in verdict["message"], where
