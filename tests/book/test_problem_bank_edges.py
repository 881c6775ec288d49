"""A whole count rounded from a ratio (racks and replicas up, sequences that fit down) must not
hang on the rounding: over
many draws the unrounded ratio the solution states keeps a margin from every whole number, so a
student who rounds a step to three figures still lands on the same count (reader 13, issue 21).
The ratio is read back from the solution's text, independently of the problem's own check."""

from __future__ import annotations

import importlib
import math
import re

import pytest

from book.problems import authored
from units.presets import load

SEEDS = range(200)
# problem, the solution's phrase around the unrounded count, how it is rounded, the margin
CASES = (
    ("batching.fewest_gpus_for_a_rate", r"needs ([\d,.]+) replicas", math.ceil, 0.05),
    ("batching.racks_for_a_global_rate", r"that is ([\d,.]+) racks", math.ceil, 0.05),
    ("long_context.sequences_that_fit", r"= ([\d,.]+), and only whole", math.floor, 0.05),
    ("reversible.sequences_beside_the_state", r"= ([\d,.]+), rounded down", math.floor, 0.05),
    # a bill: the solution states the whole count of blocks the answer is priced on
    (
        "overtraining.training_run_days",
        r": ([\d,.]+) (?:racks|servers), so ([\d,]+) ",
        math.ceil,
        0.05,
    ),
)


@pytest.mark.parametrize(
    ("problem", "phrase", "rounded", "margin"), CASES, ids=[c[0] for c in CASES]
)
def test_a_rounded_count_keeps_clear_of_a_whole_number(problem, phrase, rounded, margin):
    module = importlib.import_module(f"book.problem_bank.{problem}")
    presets = load()
    for seed in SEEDS:
        drawn = authored(module, seed, presets)
        found = re.search(phrase, " ".join(drawn.solution))
        assert found, (seed, drawn.solution[-1])
        ratio = float(found.group(1).replace(",", ""))
        if found.lastindex == 2:  # the rounded count the answer is priced on
            assert int(found.group(2).replace(",", "")) == rounded(ratio), (seed, ratio)
        else:  # the answer is that ratio rounded (racks; replicas times GPUs each; sequences)
            assert drawn.answer.m % rounded(ratio) == 0, (seed, ratio, drawn.answer)
        gap = abs(ratio - round(ratio)) / ratio  # to the nearest whole number
        # the solution shows four figures: allow their half-unit in the last place
        assert gap >= margin - 5e-4, (seed, ratio)


def test_the_gate_would_catch_the_readers_draws():
    """The faults the readers found (134.75 racks, 1.039 replicas, 52.15 sequences, reader 14's
    8.19 racks, reader 16's 132.375 sequences and 3.098 racks) fail the margins above."""
    found = (134.75, 1.039, 52.15, 8.19, 132.375, 3.098)
    for ratio, margin in ((ratio, 0.05) for ratio in found):
        assert abs(ratio - round(ratio)) / ratio < margin
