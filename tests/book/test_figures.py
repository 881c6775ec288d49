"""Figures: drawn from the equations, accessible, and themed by the page's own colour."""

import re

import pytest

from book.figures import CHAPTER_FIGURES, FIGURES, FOREGROUND
from units.presets import load


@pytest.fixture(scope="module")
def drawn():
    presets = load()
    return {fig_id: make(presets) for fig_id, make in FIGURES.items()}


def test_the_issue_s_figures_exist_and_are_used_in_chapters(drawn):
    used = {f for figs in CHAPTER_FIGURES.values() for f in figs}
    assert used == set(FIGURES)
    assert len(FIGURES) >= 8


@pytest.mark.parametrize("fig_id", sorted(FIGURES))
def test_figure_is_accessible_svg_in_the_page_colour(drawn, fig_id):
    fig = drawn[fig_id]
    assert fig.svg.startswith("<svg") and 'role="img"' in fig.svg
    assert "currentColor" in fig.svg and FOREGROUND not in fig.svg
    assert "\n\n" not in fig.svg  # one raw-HTML block in the Markdown
    assert len(fig.alt) > 60 and fig.caption
    assert re.search(r"\d", fig.alt + fig.caption), "captions carry the computed numbers"


def test_latency_figure_marks_the_computed_crossover(drawn):
    from derivations import get

    b = get("crossover_batch").evaluate(hardware="h100_sxm", model="deepseek_v3", precision="fp8")
    assert f"{round(b.m):,}" in drawn["latency_vs_batch"].caption


def test_alltoall_figure_puts_one_rack_below_the_compute_and_two_above():
    from book.chapters import moe

    data = moe.alltoall_series(load())
    layer = data["layer_compute"].to("ms").m
    assert data["lecture"][0] < layer < data["lecture"][1] < data["hardware"][1]
    # one rack: the penalty does not enter; more racks: slower, toward the full penalty
    assert data["lecture"][0] == pytest.approx(data["hardware"][0])
    assert data["lecture"] == sorted(data["lecture"])


def test_latency_figure_shows_both_regimes():
    # issue 11/12: the plotted batches must reach past the batch where compute overtakes memory
    # (at 8K context DeepSeek on H100 FP8 used to stay memory-bound at every plotted batch)
    from book.figures import EXAMPLE, latency_context
    from derivations import get
    from units.presets import load

    presets = load()
    length, turn = latency_context(presets)
    assert turn is not None
    kw = dict(EXAMPLE, presets=presets, context_length=length, n_chips="28 chip")
    below = dict(kw, batch_size=turn / 2)
    above = dict(kw, batch_size=turn * 1.5)
    assert get("compute_time").evaluate(**below) < get("memory_time").evaluate(**below)
    assert get("compute_time").evaluate(**above) > get("memory_time").evaluate(**above)


def test_cost_figure_marks_the_expert_saturation_batch(drawn):
    # DeepSeek-V3: E/k = 256 / 8 = 32 sequences
    assert "32 sequences" in drawn["cost_vs_batch"].caption
