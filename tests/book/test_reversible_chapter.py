"""The reversible chapter's numbers, against hand computations from Llama 3.1 70B's shape.

The figures here are independent: d = 8,192, 80 layers, 8,192 tokens, 2 bytes per value for a
layer input and 34 bytes per value for every activation of a layer (Korthikanti et al.), the
H100's 80 GB and 16 bytes per parameter of training state for 70.55 B parameters.
"""

import pytest

from book.chapters import reversible
from derivations import get
from units.presets import load

D, LAYERS, TOKENS = 8192, 80, 8192
INPUT = 2 * D * TOKENS  # one layer's input, bytes
EVERY = 34 * D * TOKENS * LAYERS  # every activation of the network, bytes


@pytest.fixture(scope="module")
def ctx():
    return reversible.context(load())


def test_the_best_segment_count_is_the_root_of_every_activation_over_one_input(ctx):
    m = reversible.memory_cases(load())
    assert reversible.best_segments(m) == pytest.approx((EVERY / INPUT) ** 0.5, rel=1e-6)
    assert ctx["segments_full"].exact == "37"  # sqrt(17 * 80) = 36.878, at two figures
    assert "about 37 segments" in ctx["strategies"][2]["name"]


def test_two_full_width_streams_double_the_stored_output(ctx):
    assert ctx["rev"].exact == "134.2 MB"  # 2 B * 8,192 * 8,192
    assert ctx["rev_two"].exact == "268.4 MB"


@pytest.mark.parametrize("layers", [1, 2, 4, 8, 17, 40, 80, 160])
def test_checkpointing_never_holds_less_than_the_reversible_network(layers):
    every = 34 * D * TOKENS * layers
    held = reversible.checkpointed_memory(layers, every, INPUT)
    floor = INPUT + every / layers  # the last output and one layer's internals
    assert held >= floor * (1 - 1e-12)


def test_checkpointing_at_depth_agrees_with_the_catalogue():
    presets = load()
    m = reversible.memory_cases(presets)
    every, one = m["stored"].to("B").m, m["rev"].to("B").m
    catalogue = get("checkpoint_activation_memory").evaluate(
        presets=presets,
        model=reversible.MODEL,
        batch_size=reversible.TRAIN_BATCH,
        activation_memory=m["stored"],
    )
    assert reversible.checkpointed_memory(LAYERS, every, one) == pytest.approx(
        catalogue.to("B").m, rel=1e-9
    )
    assert reversible.checkpointed_memory(LAYERS, EVERY, INPUT) == pytest.approx(
        2 * (EVERY * INPUT) ** 0.5, rel=1e-9
    )


def test_exercise_one_says_which_strategy_fits_beside_the_state(ctx):
    share = 70.55e9 * 16 / 64  # bytes of training state per chip over 64 chips
    batch = 4
    held = [
        batch * EVERY,
        batch * (LAYERS * INPUT + EVERY / LAYERS),
        2 * (batch * EVERY * batch * INPUT) ** 0.5,
        batch * (INPUT + EVERY / LAYERS),
    ]
    expected = ["fits" if h + share <= 80e9 else "does not fit" for h in held]
    assert [r["verdict"] for r in ctx["ex_verdicts"]] == expected
    assert expected == ["does not fit", "fits", "fits", "fits"]  # what the answer's prose says


def test_the_depth_figure_s_lecture_panel_has_slopes_one_half_and_zero():
    # counted in layer inputs: every input kept is L inputs, square-root checkpoints 2 sqrt(L)
    # inputs, the reversible network one input, so on log axes the slopes are 1, 1/2 and 0
    import numpy as np

    presets = load()
    kw = dict(presets=presets, model=reversible.MODEL, batch_size=reversible.TRAIN_BATCH)
    depth = np.array([10, 1000])
    inputs = get("activation_memory").sweep("n_layers", depth, **kw).to("B").m
    ckpt = get("checkpoint_activation_memory").sweep("n_layers", depth, **kw).to("B").m
    assert inputs == pytest.approx(depth * INPUT, rel=1e-9)
    assert ckpt == pytest.approx(2 * np.sqrt(depth) * INPUT, rel=1e-9)
    slope = np.diff(np.log(ckpt)) / np.diff(np.log(depth))
    assert slope[0] == pytest.approx(0.5, rel=1e-9)


def test_the_example_s_internals_are_derived_before_they_are_used():
    from book import site

    text = (site.TEMPLATES / "chapters" / "reversible.md.j2").read_text(encoding="utf-8")
    derived = text.index("{{ act_factor_bare }} × {{ context }} ×")
    for use in ("{{ stored }}) in place of", "{{ segments_full }} segments of"):
        assert derived < text.index(use)
    # 34 B * 8,192 tokens * 8,192 values = 2,281,701,376 B
    assert reversible.context(load())["buffer"].exact == "2.282 GB"
