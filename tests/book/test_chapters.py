"""Chapter contexts: the tables they compute agree with the equations they come from."""

import pytest

from book.chapters import CONTEXTS, pipeline
from book.chapters.pipeline import memory_split
from book.context import Evaluator
from derivations import CHAPTERS, get
from units import Q_
from units.presets import load


def test_every_chapter_has_a_context():
    assert set(CONTEXTS) == {c.id for c in CHAPTERS}


@pytest.mark.parametrize("stages", pipeline.STAGES)
def test_memory_split_adds_up_and_only_weights_shrink(stages):
    ev = Evaluator(load(), pipeline.RACK, pipeline.MODEL, "fp8")
    p = Q_(stages, "stage")
    weights, kv = memory_split(ev, pipeline_stages=p)
    total = get("memory_per_gpu").evaluate(
        hardware=pipeline.RACK, model=pipeline.MODEL, precision="fp8", pipeline_stages=p
    )
    assert (weights + kv).to("GB").m == pytest.approx(total.to("GB").m)
    # by hand: 671e9 one-byte weights over 64 chips and P stages
    assert weights.to("byte").m == pytest.approx(671e9 / (64 * stages))
    one_stage_kv = memory_split(ev, pipeline_stages=Q_(1, "stage"))[1]
    assert kv.to("GB").m == pytest.approx(one_stage_kv.to("GB").m)


def test_every_context_builds():
    presets = load()
    for chapter, make in CONTEXTS.items():
        assert make(presets), chapter


def test_batching_mixed_precision_example_by_hand():
    from book.chapters.batching import _mixed_precision

    rows = _mixed_precision(load(), "h100_sxm", "deepseek_v3")["rows"]
    assert [r["mix"] for r in rows] == ["BF16", "FP8", "FP4 weights, FP8 KV cache, FP8 math"]
    # facts.md: H100 989.4 / 1,978.9 TFLOP/s dense BF16 / FP8, 3.35 TB/s; DeepSeek-V3 671B/37B.
    # B* = F b_w / (2 W) x 671/37: BF16 and FP8 agree; FP4 weights on FP8 math halve it.
    hand = 1978.9 / 3.35 * 1 / 2 * 671 / 37
    assert [float(r["crossover"].split()[0].replace(",", "")) for r in rows] == pytest.approx(
        [hand, hand, hand / 2], rel=1e-3
    )
