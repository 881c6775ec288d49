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


def test_deepseek_at_batch_one_costs_about_its_active_parameters():
    # Issue 11 acceptance: the batching chapter's worked example (DeepSeek-V3, H100 SXM, FP8)
    # at one sequence is within 2x of the N_active-based figure: the lecture's 2 USD per
    # chip-hour for reading 37e9 one-byte weights and 8,192 x 61 x 576 bytes of KV at 3.35 TB/s
    # (facts.md), about 6.2 USD per million tokens. Reading all 671e9 weights gave 18x that.
    from book.chapters.batching import context as batching_context
    from derivations import get
    from units.presets import load

    hand = 2 / 3600 * (37e9 + 8192 * 61 * 576) / 3.35e12 * 1e6  # USD per million tokens
    got = get("cost_per_token").evaluate(
        hardware="h100_sxm", model="deepseek_v3", precision="fp8", batch_size=1
    )
    assert hand / 2 < got.to("USD/Mtoken").m < hand * 2
    example = batching_context(load())["examples"][0]
    assert example["model"] == "deepseek_v3" and example["precision"] == "fp8"
    assert example["cost_batch_1"].startswith(f"{got.to('USD/Mtoken').m:.3f}"[:4])
    assert example["experts_batch_1"] == "8" and example["saturation"] == "32 sequences"


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


def test_no_kv_compute_crossover_shows_a_dash():
    # A100 with DeepSeek-V3: compute stays ahead of the KV reads at every context (see
    # tests/book/test_cli.py for the hand check); the table's helper gives None (a dash), and a
    # real crossover (H100, Llama 3.1 70B) stays a positive number.
    from book.chapters.long_context import _kv_compute_context

    assert _kv_compute_context(Evaluator(load(), "a100_sxm", "deepseek_v3")) is None
    assert _kv_compute_context(Evaluator(load(), "h100_sxm", "llama_3_1_70b")).m > 0
