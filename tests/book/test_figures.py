"""Figures: drawn from the equations, accessible, and themed by the page's own colour."""

import contextlib
import re

import pytest

from book.figures import CHAPTER_FIGURES, FIGURES, FOREGROUND
from units.presets import load


@pytest.fixture(scope="module")
def drawings():
    """``{figure id: (figure, the preset reads it made)}`` on the built-in presets, as a build
    gets them (``book.figures.drawn``): a figure this session's build or this process already
    drew is read from the session's store (the very SVG a drawing makes: the cache tests below),
    not drawn again."""
    from book import figures
    from units import reads

    presets = load()
    out = {}
    for fig_id in FIGURES:
        with reads.recording() as got:
            fig = figures.drawn(fig_id, presets)
        out[fig_id] = (fig, frozenset(got))
    return out


@pytest.fixture(scope="module")
def drawn(drawings):
    return {fig_id: fig for fig_id, (fig, _) in drawings.items()}


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


def test_log_axes_are_labelled_as_text_with_the_same_ticks(drawn):
    """A log axis reads 10⁰, 10¹, ... as text (book.figures.plain_power), not mathtext: the
    batch axis of cost_vs_batch (1 to 10⁵ sequences, by hand from its sweep) says every power."""
    svg = drawn["cost_vs_batch"].svg
    assert "mathdefault" not in svg
    labels = re.findall(r">(10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)<", svg)
    assert {"10⁰", "10¹", "10²", "10³", "10⁴", "10⁵"} <= set(labels)


def test_log_axes_make_only_the_ticks_they_draw_and_draw_the_same_ones():
    """The log axes' default locator is swapped for InViewLogLocator (book.figures): the very
    SVG of matplotlib's own locator, without the ticks outside the view it makes and never
    draws (here the decades below 2 and above 3×10⁴ and their minor ticks)."""
    import matplotlib.pyplot as plt

    from book import figures

    def svg(in_view: bool):
        with plt.rc_context({**figures._style(), "svg.hashsalt": "test"}):
            fig, ax = plt.subplots(figsize=(7, 4.2))
            ax.loglog([2.0, 3e4], [5e-3, 70.0])
            if in_view:
                figures._plain_log_labels(fig)
            else:
                for axis in (ax.xaxis, ax.yaxis):  # the labels only: matplotlib's own ticks
                    for get, put in (
                        (axis.get_major_formatter, axis.set_major_formatter),
                        (axis.get_minor_formatter, axis.set_minor_formatter),
                    ):
                        new = figures.PlainLogFormatter.__new__(figures.PlainLogFormatter)
                        new.__dict__.update(get().__dict__)
                        put(new)
            try:
                out = figures._svg(fig, "a line")
                made = [len(a.majorTicks) + len(a.minorTicks) for a in (ax.xaxis, ax.yaxis)]
                drawn = [len(a._update_ticks()) for a in (ax.xaxis, ax.yaxis)]
            finally:
                plt.close(fig)
        return out, made, drawn

    plain, made, drawn = svg(in_view=False)
    culled, made_in_view, drawn_in_view = svg(in_view=True)
    assert culled == plain and drawn_in_view == drawn
    assert made_in_view == drawn and all(m > d for m, d in zip(made, drawn, strict=True))


def test_ticks_copied_from_a_prototype_draw_the_same_svg():
    """book.figures._quick_ticks makes each tick as a copy of one made once per axis (and per
    set of tick parameters): a figure with log and linear axes, shared axes, tick labels set
    with their own style, tick parameters changed after ticks exist, ticks made anew after a
    label was changed in place or with new parameters, minor ticks on, and axis labels aligned
    across the axes (placed by another axis' ticks, which are not memoised) draws the very SVG
    with matplotlib's own ticks; and matplotlib is as it was afterwards."""
    import matplotlib.axis
    import matplotlib.pyplot as plt
    from matplotlib.markers import MarkerStyle

    from book import figures

    Axis = matplotlib.axis.Axis
    names = ("_get_tick", "draw", "get_tightbbox", "_update_ticks", "_get_ticklabel_bboxes")
    methods = [getattr(Axis, name) for name in names] + [MarkerStyle._set_marker]

    def svg(quick: bool):
        quick_ticks = figures._quick_ticks() if quick else contextlib.nullcontext()
        with plt.rc_context({**figures._style(), "svg.hashsalt": "test"}), quick_ticks:
            fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7, 4.2))
            top.loglog([2.0, 3e4], [5e-3, 70.0], marker="o")
            top.tick_params(axis="y", labelsize=7, length=6, colors="#d62728")
            bottom.plot([2.0, 3e4], [1.0, 5.0])
            bottom.set_yticks([1, 2, 4], ["one", "two", "four"], rotation=30, fontsize=8)
            bottom.minorticks_on()
            bottom.tick_params(which="minor", length=2, width=0.5)
            for _ in range(2):  # new ticks, with the defaults, after one label changed in place
                bottom.tick_params(axis="x", reset=True)
                bottom.xaxis.get_major_ticks()[0].label1.set_fontsize(15)
            bottom.tick_params(axis="y", reset=True, labelsize=9, direction="in")
            top.set_ylabel("rate")
            bottom.set_ylabel("share")
            fig.align_ylabels()  # each y label placed by both axes' tick labels
            figures._plain_log_labels(fig)
            try:
                return figures._svg(fig, "two panels")
            finally:
                plt.close(fig)

    assert svg(quick=True) == svg(quick=False)
    assert [getattr(Axis, name) for name in names] + [MarkerStyle._set_marker] == methods


def test_latency_figure_marks_the_computed_crossover(drawn):
    from derivations import get

    b = get("crossover_batch").evaluate(
        hardware="gb200_nvl72", model="deepseek_v3", precision="fp8"
    )
    assert f"{round(b.m):,}" in drawn["latency_vs_batch"].caption


def test_alltoall_figure_puts_one_rack_below_the_compute_and_two_above():
    from book.chapters import moe

    data = moe.alltoall_series(load())
    layer = data["layer_compute"].to("ms").m
    assert data["two"][0] < layer < data["two"][1] < data["hardware"][1]
    # one rack: the penalty does not enter; more racks: slower, toward the full penalty
    assert data["two"][0] == pytest.approx(data["hardware"][0])
    assert data["two"] == sorted(data["two"])


def test_alltoall_figure_sends_once_per_rack_near_the_one_rack_time_on_gb300():
    from book.chapters import moe

    data = moe.alltoall_series(load())
    # DeepSeek-V3, 2 racks. GB300 NVL72: 900 GB/s NVLink over an 800 Gb/s = 100 GB/s port, 9x:
    # max(1, (1 - 2^-8) x 9 / 8) = 1.12 times the one-rack time; GB200's 50 GB/s port, 18x,
    # gives (1 - 2^-8) x 18 / 8 times it (tests/derivations/test_moe.py)
    one = data["two"][0]
    assert data["once_two"][1] == pytest.approx(one * (1 - 0.5**8) * 9 / 8)
    assert data["once_hardware"][1] == pytest.approx(one * (1 - 0.5**8) * 18 / 8)
    assert all(o <= p for o, p in zip(data["once_hardware"], data["hardware"], strict=True))


def test_latency_figure_shows_both_regimes():
    # issue 11/12: the plotted batches must reach past the batch where compute overtakes memory
    # (at 8K context DeepSeek on H100 FP8 used to stay memory-bound at every plotted batch; the
    # example is now the GB200 rack, 13 chips: (671e9 + 5,668 x 576 x 61 x 8,192) / 186e9 = 12.4)
    from book.figures import EXAMPLE, latency_context
    from derivations import get
    from units.presets import load

    presets = load()
    length, turn = latency_context(presets)
    assert turn is not None
    kw = dict(EXAMPLE, presets=presets, context_length=length, n_chips="13 chip")
    below = dict(kw, batch_size=turn / 2)
    above = dict(kw, batch_size=turn * 1.5)
    assert get("compute_time").evaluate(**below) < get("memory_time").evaluate(**below)
    assert get("compute_time").evaluate(**above) > get("memory_time").evaluate(**above)


def test_cost_figure_marks_the_expert_saturation_batch(drawn):
    # DeepSeek-V3: E/k = 256 / 8 = 32 sequences
    assert "32 sequences" in drawn["cost_vs_batch"].caption


# -- written SVGs remembered on disk (units/diskcache.py) ------------------------------------


@pytest.fixture
def svgs(empty_cache, monkeypatch):
    """A fresh, empty figure store; ``written`` counts the figures matplotlib really writes."""
    from book import figures

    written = []
    svg = figures._svg

    def counted(fig, alt):
        written.append(alt)
        return svg(fig, alt)

    monkeypatch.setattr(figures, "_svg", counted)
    return written


def _line(ys=(3.0, 4.0), label="a line", alt="A line rising.", xlabel="x"):
    from book.figures import _render

    def draw(fig, ax):
        ax.plot([1.0, 2.0], list(ys), label=label)
        ax.set_xlabel(xlabel)
        ax.legend()

    return _render("test_line", draw, alt, "caption")


def test_drawing_leaves_garbage_collection_as_it_was(svgs):
    """No collection while a figure is drawn (book.figures._collected_after); afterwards the
    collector is on again if it was on, off if it was off, also when the drawing fails."""
    import gc

    from book.figures import _render

    def fails(fig, ax):
        assert not gc.isenabled()
        raise RuntimeError("a drawing that fails")

    assert gc.isenabled()
    _line()
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        _render("test_fails", fails, "A figure that fails.", "caption")
    assert gc.isenabled()
    gc.disable()
    try:
        _line(label="another line")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_figures_drawn_in_threads_are_the_ones_drawn_one_by_one(svgs, monkeypatch):
    """Drawing patches matplotlib for the figure (book.figures._quick_ticks) under a lock: two
    threads drawing at once make the SVGs drawn one by one, and leave matplotlib as it was."""
    from concurrent.futures import ThreadPoolExecutor

    import matplotlib.axis

    monkeypatch.setenv("CHALKBOARD_CACHE", "0")  # drawn every time, never read
    kinds = [{"ys": (3.0, 4.0 + k)} for k in range(4)]
    alone = [_line(**kind).svg for kind in kinds]
    methods = dict(vars(matplotlib.axis.Axis))
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda kind: _line(**kind).svg, kinds * 2))
    assert together == alone * 2 and len(svgs) == 12
    assert dict(vars(matplotlib.axis.Axis)) == methods


def test_the_same_figure_is_read_from_the_cache(svgs):
    first = _line()
    assert _line() == first and len(svgs) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"ys": (3.0, 4.000001)},
        {"label": "a curve"},
        {"alt": "A line rising fast."},
        {"xlabel": "y"},
    ],
)
def test_a_changed_value_or_text_is_drawn_again(svgs, change):
    first = _line()
    changed = _line(**change)
    assert len(svgs) == 2 and changed.svg != first.svg
    assert _line() == first and len(svgs) == 2


def test_a_damaged_entry_is_drawn_again_the_same(svgs, tmp_path):
    first = _line()
    for entry in (p for p in tmp_path.rglob("*") if p.is_file()):
        entry.write_bytes(entry.read_bytes().replace(b"<svg", b"<sgv"))
    assert _line() == first and len(svgs) == 2


def test_with_the_cache_off_every_figure_is_drawn(svgs, tmp_path, monkeypatch):
    first = _line()
    monkeypatch.setenv("CHALKBOARD_CACHE", "0")
    assert _line() == first and _line() == first and len(svgs) == 3


@pytest.fixture
def like_a_fresh_process(monkeypatch):
    """The store's keys as a fresh process makes them: every ``--extra`` module loaded in this
    process is in its digests (book.resultcache.inputs_digest), and an earlier test in it may have
    loaded one (tests/book/test_hostile.py does), which a fresh process has not; hidden from
    ``sys.modules`` for the test, so that this process and a fresh one share entries."""
    import sys

    for name in [n for n in sys.modules if n.startswith("chalkboard_extra_")]:
        monkeypatch.delitem(sys.modules, name)


def test_figures_cached_by_another_process_are_the_ones_drawn_here(svgs, tmp_path, monkeypatch):
    """The key is the figure's state, not where it sits in memory: a cache written by another
    process (another string hash seed) is read here, and holds the very SVG drawn here."""
    import hashlib
    import os
    import subprocess
    import sys
    from pathlib import Path

    names = ["feistel_round", "pipeline_bubble"]
    code = (
        "import hashlib\n"
        "from book.figures import FIGURES\n"
        "from units.presets import load\n"
        f"for name in {names!r}:\n"
        "    print(hashlib.sha256(FIGURES[name](load()).svg.encode()).hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    there = done.stdout.split()
    presets = load()
    here = [hashlib.sha256(FIGURES[n](presets).svg.encode()).hexdigest() for n in names]
    assert here == there and svgs == []  # read, not drawn
    monkeypatch.setenv("CHALKBOARD_CACHE", "0")
    drawn_here = [hashlib.sha256(FIGURES[n](presets).svg.encode()).hexdigest() for n in names]
    assert drawn_here == there and len(svgs) == 2


def test_kv_routes_reach_the_kink_by_windows_or_sparse_reads(drawn):
    # lecture section F: one global layer of Llama 3.1 70B's heads at FP8 reads 1 x 8 x 2 x 128 =
    # 2,048 bytes; the kink implies 2 x 100e9 x 3.35e12 / (1,979e12 x 200e3) = 1,693 bytes.
    # Reader lr26, fault 1: a cache shared by all layers is re-read by each, so it is no route.
    alt = drawn["kv_routes"].alt
    assert "one global layer, the rest windowed: 1 × 8 KV heads × 2 × 128, 2 kB per token" in alt
    assert "shared" not in alt
    assert "80 layers × 8 KV heads × 2 × 128, 164 kB per token" in alt  # 163,840 bytes (as text)
    assert "1 token in 97: chosen to match the kink" in alt and "1.7 kB per token" in alt


def test_latency_figure_draws_the_memory_it_takes_a_max_over(drawn):
    svg = drawn["latency_vs_batch"].svg
    assert "memory (weight fetch + KV fetch)" in svg


# -- figures kept under their inputs (book/resultcache.py): no drawing on a warm build --------


def _figure_entries(root):
    from units import diskcache

    return sorted(p for p in (root / diskcache.FOLDER / "figure").rglob("*") if p.is_file())


@pytest.fixture
def kept(empty_cache, monkeypatch):
    """An empty store; ``calls`` lists the figures whose code really runs."""

    calls = []
    for fig_id, make in list(FIGURES.items()):
        monkeypatch.setitem(FIGURES, fig_id, lambda p, m=make, i=fig_id: calls.append(i) or m(p))
    return calls


@pytest.fixture
def kept_drawings(drawings, empty_cache, monkeypatch):
    """As ``kept``, each figure's code answering with the module's ``drawings`` of the built-in
    presets (the same figure, its same preset reads noted) instead of drawing it a second time."""
    from units import reads

    presets, calls = load(), []
    for fig_id, (fig, got) in drawings.items():

        def make(p, i=fig_id, fig=fig, got=got):
            assert p.files == presets.files, "drawn on the built-in presets only"
            calls.append(i)
            reads.note_all(got)
            return fig

        monkeypatch.setitem(FIGURES, fig_id, make)
    return calls


def test_a_kept_figure_is_the_one_drawn_and_its_code_does_not_run_again(kept):
    from book.figures import remembered_figure

    presets = load()
    first = remembered_figure("pipeline_bubble", presets)
    assert first == FIGURES["pipeline_bubble"](presets) and kept == ["pipeline_bubble"] * 2
    assert remembered_figure("pipeline_bubble", presets) == first and len(kept) == 2


def test_a_figure_draws_again_when_its_code_changes_not_for_a_preset_file_s_bytes(
    kept, tmp_path, monkeypatch
):
    from book import resultcache
    from book.figures import remembered_figure

    mine = tmp_path / "mine.toml"
    mine.write_text("")
    presets = load((str(mine),))
    remembered_figure("feistel_round", presets)
    remembered_figure("feistel_round", presets)
    assert len(kept) == 1
    mine.write_text("# edited\n")  # the same values, another file: the entry is keyed by the
    remembered_figure("feistel_round", load((str(mine),)))  # values the figure read (serve)
    assert len(kept) == 1
    source = tmp_path / "figure_code.py"
    source.write_text("x = 1\n")
    monkeypatch.setattr(resultcache, "code_closure", lambda _: (str(source),))
    remembered_figure("feistel_round", presets)
    source.write_text("x = 2\n")  # an edit of the code the figure is made by
    remembered_figure("feistel_round", presets)
    assert len(kept) == 3


def test_a_tampered_figure_is_refused_and_drawn_again(kept, empty_cache, capsys, monkeypatch):
    from book.figures import remembered_figure
    from units import diskcache

    monkeypatch.setattr(diskcache, "NOTED", set())
    presets = load()
    first = remembered_figure("feistel_round", presets)
    (entry,) = _figure_entries(empty_cache)
    entry.write_bytes(entry.read_bytes().replace(b"<svg", b"<svg onload='x()'", 1))
    assert remembered_figure("feistel_round", presets) == first and len(kept) == 2
    assert "damaged entry" in capsys.readouterr().err


def test_the_figures_code_is_every_book_module_it_imports():
    from book.resultcache import code_closure

    closure = code_closure("book/figures.py")
    assert {"book/figures.py", "book/chapters/pipeline.py", "book/predict.py"} <= set(closure)
    assert "book/claims.toml" in closure  # read by book.claims, named there
    assert "book/cards.py" not in closure and "book/site.py" not in closure


def test_a_warm_build_s_figures_never_import_matplotlib(
    kept_drawings, empty_cache, like_a_fresh_process
):
    """Every figure read from a store written by another process: matplotlib stays unimported.

    The store is filled here, with the figures this module drew (``drawings``: a fresh process
    drawing them all would compute the prediction again, and drawing them a second time here
    would cost seconds for the same SVGs); the reader is a fresh process, which then draws one
    figure with the cache off to show its probe sees matplotlib come in."""
    import hashlib
    import subprocess
    import sys
    from pathlib import Path

    from book.figures import remembered_figure

    kept = kept_drawings

    presets = load()
    here = [remembered_figure(f, presets).svg for f in sorted(FIGURES)]
    assert sorted(kept) == sorted(FIGURES)  # the store was empty: every figure was drawn here
    assert len(_figure_entries(empty_cache)) == len(FIGURES)
    code = (
        "import hashlib, os, sys\n"
        "from book.figures import FIGURES, drawn, remembered_figure\n"
        "from units.presets import load\n"
        "svgs = [drawn(f, load()).svg for f in sorted(FIGURES)]\n"
        "print(len(svgs), 'matplotlib' in sys.modules)\n"
        "print(hashlib.sha256(''.join(svgs).encode()).hexdigest())\n"
        "os.environ['CHALKBOARD_CACHE'] = '0'\n"
        "remembered_figure('feistel_round', load())\n"
        "print('matplotlib' in sys.modules)\n"
    )
    run = [sys.executable, "-c", code]
    where = dict(capture_output=True, text=True, check=True, cwd=Path(__file__).parents[2])
    digest = hashlib.sha256("".join(here).encode()).hexdigest()
    assert subprocess.run(run, **where).stdout.split() == [
        str(len(FIGURES)),
        "False",  # every figure read from the store
        digest,  # the very SVGs drawn here
        "True",  # drawing one with the cache off imports matplotlib: the probe can fail
    ]
