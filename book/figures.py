"""Figures drawn from the equations at build time: SVG, one house style, light and dark mode.

Every curve is an equation evaluated on presets (compiled sweeps), and every caption and alt text
is written from the same numbers. The SVG is inlined into the page with its text and lines in
``currentColor``, so it takes the page's own foreground colour in either theme.

>>> fig = FIGURES["roofline"](load())
>>> fig.svg.startswith("<svg") and "currentColor" in fig.svg
True
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import io
import os
import re
import threading
from dataclasses import dataclass

import numpy as np
import pint

from book.context import Evaluator
from book.format import chip_name, context_tokens, number, quantity, spoken, spoken_number
from units import Q_, reads
from units.presets import Presets, load

FOREGROUND = "#010101"  # replaced by currentColor in the SVG
VIRIDIS_MID = "#21918c"  # the middle of the contour plots' colour map, for their legend
PALETTE = ("#1f77b4", "#e8710a", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
STYLE = {
    "svg.fonttype": "none",
    "font.size": 10,
    "font.family": "sans-serif",
    "text.color": FOREGROUND,
    "axes.edgecolor": FOREGROUND,
    "axes.labelcolor": FOREGROUND,
    "xtick.color": FOREGROUND,
    "ytick.color": FOREGROUND,
    "grid.color": FOREGROUND,
    "grid.alpha": 0.15,
    "axes.grid": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.transparent": True,
    "figure.autolayout": False,  # no layout engine but the one tight_layout() runs (_svg)
    "figure.constrained_layout.use": False,
    "axes.prop_cycle": None,  # set below
}


@dataclass(frozen=True)
class Figure:
    id: str
    svg: str
    alt: str
    caption: str

    @property
    def html(self) -> str:
        """A <figure> for the Markdown page (md_in_html)."""
        return (
            f'<figure class="chalkboard-figure" id="figure-{self.id}">\n{self.svg}\n'
            f"<figcaption>{self.caption}</figcaption>\n</figure>"
        )


def _style():
    import matplotlib

    matplotlib.use("Agg")
    from cycler import cycler

    return {**STYLE, "axes.prop_cycle": cycler(color=PALETTE)}


def _render(fig_id: str, draw, alt: str, caption: str) -> Figure:
    """Draw the figure and write its SVG, or read the SVG from the cache (units.diskcache)
    when a figure in exactly this state was written before (see :func:`figure_key`)."""
    import matplotlib.pyplot as plt

    with (
        _DRAWING,
        _collected_after(),
        plt.rc_context({**_style(), "svg.hashsalt": fig_id}),
        _quick_ticks(),
    ):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        try:
            draw(fig, ax)
            _plain_log_labels(fig)
            key = figure_key(fig_id, fig, alt)
            cached = _svgs().get(key) if key is not None else None
            if cached is not None:
                return Figure(fig_id, cached.decode("utf-8"), alt, caption)
            svg = _svg(fig, alt)
        finally:
            plt.close(fig)
    if key is not None:
        _svgs().put(key, svg.encode("utf-8"))
    return Figure(fig_id, svg, alt, caption)


# one figure drawn at a time: _quick_ticks patches matplotlib's classes for the drawing (and
# pyplot is not thread-safe); a figure may draw another inside its drawing (a re-entrant lock)
_DRAWING = threading.RLock()


@contextlib.contextmanager
def _collected_after():
    """No cyclic garbage collection while a figure is drawn: its artists are garbage the
    moment it is written, and the first collection after it frees them while they are young.
    Collected during the drawing, they survived into the oldest generation and set off its full
    collections, over every object the process holds: drawing the 23 figures alone in one
    process (tests, a fresh process) spent about a tenth of its CPU in them. In a whole build
    the oldest generation is large enough that the figures seldom set one off either way."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def _quick_ticks():
    """While a figure is drawn, an axis makes each new tick as a copy of a tick made once.

    matplotlib makes every tick anew (two labels, two marks, a grid line, each an artist set up
    from the rc settings) and then copies the first tick's properties onto it; copying the new
    marks' marker deep-copies it. Building a tick was about a fifth of the figures' CPU, most of
    it for the minor ticks of log axes. Here the first tick an axis makes (per kind, major or
    minor, and per set of tick parameters) is kept untouched as a prototype, and every tick,
    that one too, is a copy of it: the same attributes, with its own callback registry and font
    properties (the parts matplotlib changes in place), so it is the tick matplotlib would make.
    The rc settings are the house style's for the whole figure (:func:`_render`), so a tick
    made later would be made the same. A marker without a user transform is copied without
    deep-copying its path and transform, which matplotlib never changes in place.

    And while an axis is drawn or measured for the layout, its ticks are placed and their
    labels measured once: matplotlib does it, then again to place the axis label (for the axes
    whose labels it aligns, by default the axis alone) and again for each spine next to it,
    with nothing changed in between (drawing the ticks moves none of them).
    """
    import matplotlib.axis
    from matplotlib.markers import MarkerStyle

    made = matplotlib.axis.Axis._get_tick
    set_marker = MarkerStyle._set_marker
    # by id() of the axis (a prototype holds its axes, so no other axis takes that id)
    prototypes: dict[tuple[int, bool], tuple[dict, object]] = {}

    def get_tick(axis, major):
        kw = axis._major_tick_kw if major else axis._minor_tick_kw
        held = prototypes.get((id(axis), major))
        try:
            same = held is not None and held[0] == kw
        except ValueError:  # a parameter that will not compare (an array): make it anew
            same = False
        if not same:
            held = prototypes[(id(axis), major)] = (dict(kw), made(axis, major))
        return _copy_tick(held[1])

    def quick_set_marker(style, marker):
        if isinstance(marker, MarkerStyle) and marker._user_transform is None:
            style.__dict__ = dict(marker.__dict__)
        else:
            set_marker(style, marker)

    Axis = matplotlib.axis.Axis
    kept = {
        name: getattr(Axis, name)
        for name in ("draw", "get_tightbbox", "_update_ticks", "_get_ticklabel_bboxes")
    }
    placing: dict[int, dict] = {}  # by id() of the axis being drawn or measured: its ticks

    def once(name):
        @functools.wraps(kept[name])
        def whole(axis, *args, **kwargs):
            if id(axis) in placing:  # drawn or measured inside itself: matplotlib's own way
                return kept[name](axis, *args, **kwargs)
            placing[id(axis)] = {}
            try:
                return kept[name](axis, *args, **kwargs)
            finally:
                del placing[id(axis)]

        return whole

    def update_ticks(axis):
        memo = placing.get(id(axis))
        if memo is None:
            return kept["_update_ticks"](axis)
        if "ticks" not in memo:
            memo["ticks"] = kept["_update_ticks"](axis)
        return list(memo["ticks"])

    def ticklabel_bboxes(axis, ticks, renderer):
        memo = placing.get(id(axis))
        if memo is None:
            return kept["_get_ticklabel_bboxes"](axis, ticks, renderer)
        key = ("bboxes", id(renderer), *map(id, ticks))
        if key not in memo:
            memo[key] = (renderer, ticks, kept["_get_ticklabel_bboxes"](axis, ticks, renderer))
        first, second = memo[key][2]
        return list(first), list(second)

    Axis._get_tick = get_tick
    MarkerStyle._set_marker = quick_set_marker
    Axis.draw, Axis.get_tightbbox = once("draw"), once("get_tightbbox")
    Axis._update_ticks, Axis._get_ticklabel_bboxes = update_ticks, ticklabel_bboxes
    try:
        yield
    finally:
        Axis._get_tick = made
        MarkerStyle._set_marker = set_marker
        for name, method in kept.items():
            setattr(Axis, name, method)


def _copy_tick(tick):
    """A copy of an unused tick as matplotlib would make it (see :func:`_quick_ticks`)."""
    from matplotlib.cbook import CallbackRegistry
    from matplotlib.text import Text

    def copied(artist):
        new = object.__new__(type(artist))
        new.__dict__.update(artist.__dict__)
        new._callbacks = CallbackRegistry(signals=["pchanged"])
        if isinstance(artist, Text):
            new._fontproperties = artist._fontproperties.copy()
        return new

    new = copied(tick)
    for part in ("tick1line", "tick2line", "gridline", "label1", "label2"):
        setattr(new, part, copied(getattr(tick, part)))
    return new


SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
# matplotlib's log label $\mathdefault{-2\times10^{-3}}$: sign, coefficient, base, power
MATHTEXT_POWER = re.compile(
    r"\$\\mathdefault\{(-?)(?:(\d+(?:\.\d+)?)\\times)?(\d+)\^\{(-?\d+)\}\}\$"
)


def plain_power(label: str) -> str:
    r"""A log axis' tick label written as text instead of mathtext (whose parser is most of the
    cost of drawing a log axis); a label of any other form is left as it is.

    >>> plain_power(r"$\mathdefault{10^{-3}}$"), plain_power(r"$\mathdefault{2\times10^{4}}$")
    ('10⁻³', '2×10⁴')
    >>> plain_power("$\\mathdefault{1}$")
    '$\\mathdefault{1}$'
    """
    match = MATHTEXT_POWER.fullmatch(label)
    if match is None:
        return label
    sign, coefficient, base, exponent = match.groups()
    head = f"{sign}{coefficient}×" if coefficient else sign
    return f"{head}{base}{exponent.translate(SUPERSCRIPT)}"


def _plain_log_labels(fig) -> None:
    """Every log axis of ``fig`` labelled by ``PlainLogFormatter``: the same ticks and
    labels as matplotlib's default, as text (``10³``, ``2×10⁴``); and its default ticks placed
    by ``InViewLogLocator``, which makes no ticks outside the axis' view."""
    from matplotlib.ticker import LogFormatterSciNotation, LogLocator

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for get, put, default, cls in (
                (
                    axis.get_major_formatter,
                    axis.set_major_formatter,
                    LogFormatterSciNotation,
                    _plain_formatter_class,
                ),
                (
                    axis.get_minor_formatter,
                    axis.set_minor_formatter,
                    LogFormatterSciNotation,
                    _plain_formatter_class,
                ),
                (axis.get_major_locator, axis.set_major_locator, LogLocator, _in_view_class),
                (axis.get_minor_locator, axis.set_minor_locator, LogLocator, _in_view_class),
            ):
                old = get()
                if type(old) is default:  # the scale's default, as it is
                    new = cls().__new__(cls())
                    new.__dict__.update(old.__dict__)
                    put(new)


@functools.cache
def _plain_formatter_class():
    from matplotlib.ticker import LogFormatterSciNotation

    class PlainLogFormatter(LogFormatterSciNotation):
        def __call__(self, x, pos=None):
            return plain_power(super().__call__(x, pos))

    PlainLogFormatter.__module__ = __name__
    PlainLogFormatter.__qualname__ = "PlainLogFormatter"
    return PlainLogFormatter


IN_VIEW = 1e-6  # how far past the view (relative) a kept tick may lie; matplotlib's is 1e-10


@functools.cache
def _in_view_class():
    """A log axis' default tick locator that returns only the ticks in (or at the edges of) the
    view: matplotlib makes a tick (a label, two marks and a grid line) for every location its
    locator returns, then draws only those in the view, so the drawn ticks are the same and the
    ticks it never draws are not made."""
    from matplotlib.ticker import LogLocator

    class InViewLogLocator(LogLocator):
        def __call__(self):
            ticks = np.asarray(super().__call__())
            low, high = sorted(self.axis.get_view_interval())
            return ticks[(ticks >= low * (1 - IN_VIEW)) & (ticks <= high * (1 + IN_VIEW))]

    InViewLogLocator.__module__ = __name__
    InViewLogLocator.__qualname__ = "InViewLogLocator"
    return InViewLogLocator


def __getattr__(name):  # matplotlib is imported only when a figure is drawn
    if name == "PlainLogFormatter":
        return _plain_formatter_class()
    if name == "InViewLogLocator":
        return _in_view_class()
    raise AttributeError(name)


def _svg(fig, alt: str) -> str:
    """The drawn figure laid out and written as inline SVG in ``currentColor``."""
    fig.tight_layout()
    # laid out once: without an engine (tight_layout leaves a placeholder) savefig draws the
    # figure once, instead of a dry run first that only a layout engine would need
    fig.set_layout_engine(None)
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = svg.replace(FOREGROUND, "currentColor")
    svg = "\n".join(line for line in svg.splitlines() if line.strip())  # one Markdown HTML block
    svg = re.sub(r'(<svg[^>]*?) width="[^"]+" height="[^"]+"', r"\1", svg, count=1)
    label = alt.replace('"', "&quot;")
    return svg.replace("<svg ", f'<svg role="img" aria-label="{label}" class="chalkboard-svg" ', 1)


@functools.cache
def _svgs():
    """The store of written SVGs. Its version names what the SVG of a figure state depends on:
    matplotlib's version, this module's source (the style and the SVG's post-processing) and
    the font that lays out the text."""
    import matplotlib
    from matplotlib.font_manager import FontProperties, findfont

    from units import diskcache

    font = findfont(FontProperties(family=[STYLE["font.family"]]))
    version = diskcache.digest(
        matplotlib.__version__, diskcache.source_digest(__file__), font, str(os.stat(font).st_size)
    )
    return diskcache.Store("figures", version[:32])


class _StateHash:
    """A file for pickle to write to that only hashes what it is given."""

    def __init__(self):
        self.hash = hashlib.sha256()

    def write(self, data) -> None:
        self.hash.update(data)


def figure_key(fig_id: str, fig, alt: str) -> str | None:
    """A digest of everything a drawn figure's SVG is made from: the whole state of the
    figure as pickle sees it (every artist: its data, text, colours, styles, sizes, limits,
    scales), the rc settings in force, the id (the SVG's hash salt) and the alt text (its
    label). None when the figure cannot be pickled (then it is not cached).

    Pickle's one record of where objects sit in memory, the keys of a transform's ``_parents``
    (``id()`` of each child), is written as the list of children instead, so the same figure
    drawn in another process has the same key.
    """
    import copyreg
    import pickle

    import matplotlib
    from matplotlib.transforms import TransformNode

    def canonical(obj):
        children = [ref() for ref in obj._parents.values()]
        return type(obj), (), {**obj.__dict__, "_parents": children}

    # every transform class by its exact type, looked up in C (a reducer_override, a Python
    # call for every object pickled, was most of the key's cost)
    transforms, stack = {}, [TransformNode]
    while stack:
        cls = stack.pop()
        transforms[cls] = canonical
        stack.extend(cls.__subclasses__())
    out = _StateHash()
    try:
        pickler = pickle.Pickler(out, protocol=5)
        pickler.dispatch_table = {**copyreg.dispatch_table, **transforms}
        pickler.dump(fig)
    except Exception:  # noqa: BLE001 - an artist pickle cannot write: draw it every time
        return None
    rc = repr(sorted((k, repr(v)) for k, v in matplotlib.rcParams.items()))
    return "\n".join((fig_id, alt, rc, out.hash.hexdigest()))


def _spread_on_log(at: list[float], gap: float) -> list[float]:
    """Label heights on a log axis, sorted, pushed apart until each is at least ``gap`` times
    the one below; two that meet move apart by the same factor.

    >>> [round(y, 3) for y in _spread_on_log([1.0, 1.1, 10.0], gap=2.0)]
    [0.742, 1.483, 10.0]
    """
    at = list(at)
    for _ in range(100):
        for i in range(1, len(at)):
            if at[i] < at[i - 1] * gap:
                push = (at[i - 1] * gap / at[i]) ** 0.5
                at[i], at[i - 1] = at[i] * push, at[i - 1] / push
    return at


def _mark(ax, x, text, *, vertical=True, fontsize=9):
    (ax.axvline if vertical else ax.axhline)(x, color=FOREGROUND, linestyle=":", linewidth=1)
    if vertical:
        ax.annotate(
            text,
            (x, 1),
            xycoords=("data", "axes fraction"),
            xytext=(4, -12),
            textcoords="offset points",
            fontsize=fontsize,
        )
    else:
        ax.annotate(
            text,
            (0, x),
            xycoords=("axes fraction", "data"),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=fontsize,
        )


# -- chapter A -------------------------------------------------------------------------------

EXAMPLE = dict(hardware="gb200_nvl72", model="deepseek_v3", precision="fp8")  # batching's


def _compute_bound_from(presets: Presets, **kw) -> float | None:
    """The smallest batch at which the step turns compute-bound (compute >= memory), or None."""
    from derivations import get

    batches = np.geomspace(1, 1e6, 2000)
    compute = get("compute_time").sweep("batch_size", batches, presets=presets, **kw).m
    memory = get("memory_time").sweep("batch_size", batches, presets=presets, **kw).m
    hit = np.nonzero(compute >= memory)[0]
    if not hit.size:
        return None
    i = hit[0]
    if i == 0:
        return float(batches[0])
    # both times are straight lines between grid points: the crossing, not the next grid point
    # (so the figure and the chapter's prose name the same batch)
    gap = compute - memory
    step = (batches[i] - batches[i - 1]) / (gap[i] - gap[i - 1])
    return float(batches[i - 1] - gap[i - 1] * step)


def latency_context(presets: Presets) -> tuple[pint.Quantity, float]:
    """A context at which the example's step turns compute-bound within the plotted batches (the
    default context, halved until it does), and the batch where it turns."""
    ev = Evaluator(presets, **EXAMPLE)
    b_star = ev.q("crossover_batch").to("sequence").m
    length = presets.parameter["context_length"].value.to("token/sequence")
    n = Q_(np.ceil(ev.q("chips_to_fit", batch_size=b_star).to("chip").m), "chip")
    while True:
        turn = _compute_bound_from(presets, **EXAMPLE, n_chips=n, context_length=length)
        if (turn is not None and turn < 4 * b_star) or length.m < 2:
            return length, turn
        length = length / 2


def latency_vs_batch(presets: Presets) -> Figure:
    from derivations import get

    ev = Evaluator(presets, **EXAMPLE)
    b_star = ev.q("crossover_batch").to("sequence").m
    chips = ev.q("chips_to_fit", batch_size=b_star).to("chip").m
    n = Q_(np.ceil(chips), "chip")
    length, turn = latency_context(presets)
    # a log batch axis (editor's pass, issue 22): the flat weight-fetch floor and the MoE's ramp
    # up to E_r/k fill the left of the figure instead of its first few pixels
    batches = np.geomspace(1, 3 * max(b_star, turn or 0), 400)  # room to label the turn
    saturation = ev.q("expert_saturation_batch").to("sequence").m
    floor = ev.q("weight_fetch_time", batch_size=b_star, n_chips=n).to("ms")  # every expert read
    kw = dict(EXAMPLE, presets=presets, n_chips=n, context_length=length)
    lines = {
        name: get(eq).sweep("batch_size", batches, **kw).to("ms").m
        for name, eq in (
            ("compute (weights and attention)", "compute_time"),
            ("weight fetch", "weight_fetch_time"),
            ("KV fetch", "kv_fetch_time"),
        )
    }
    # the sum the step takes a max over: without it the step's curve above every drawn line
    # has no visible reason (reader's report, batching fault 3)
    memory = get("memory_time").sweep("batch_size", batches, **kw).to("ms").m
    total = get("step_time").sweep("batch_size", batches, **kw).to("ms").m
    names = {
        "model": presets.get("model", EXAMPLE["model"]).name,
        "hardware": chip_name(presets.get("hardware", EXAMPLE["hardware"])),
    }
    turn_q = Q_(np.ceil(turn), "sequence")  # the crossing, rounded up as the chapter runs it
    at = ev.q("step_time", batch_size=turn, n_chips=n, context_length=length)

    def draw(fig, ax):
        ax.plot(
            batches,
            total,
            color=FOREGROUND,
            linewidth=4,
            alpha=0.35,
            label="step time (max of compute, memory)",
        )
        for label, y in lines.items():
            ax.plot(batches, y, label=label, linewidth=1.4)
        ax.plot(
            batches,
            memory,
            color=PALETTE[4],
            linestyle="--",
            linewidth=1.6,
            label="memory (weight fetch + KV fetch)",
        )
        ax.set_xscale("log")
        ax.axvspan(1, turn, alpha=0.06, color=PALETTE[1])
        _mark(ax, saturation, "Eᵣ/k")
        _mark(ax, b_star, "B*")
        _mark(ax, turn, "turn")  # the turn batch: compute catches weights plus KV
        ax.annotate(  # low, right of the turn: the curves there are above it
            "compute-\nbound →",
            (turn, 0.3),
            xycoords=("data", "axes fraction"),
            xytext=(4, 0),
            textcoords="offset points",
            fontsize=9,
        )
        ax.text(
            np.sqrt(saturation * b_star),
            0.42,
            "memory-bound:\nthe step barely grows\nwith the batch",
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="top",
            fontsize=9,
        )
        ax.set_xlabel("batch size B (sequences, log scale)")
        ax.set_ylabel("time per decode step (ms)")
        ax.set_xlim(1, batches[-1])
        # past the turn the lines climb off the top: the figure is about the turn, not beyond
        ax.set_ylim(0, 2.2 * at.to("ms").m)
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.9), fontsize=9)

    alt = (
        f"Decode step time against batch size for {names['model']} on {spoken(n)} of "
        f"{names['hardware']} at FP8 with {context_tokens(length)} of context: weight fetch rises "
        f"while each new sequence brings new experts and is flat once all are read; compute "
        f"(weights and attention) and KV fetch rise with the batch, on a log batch axis. The step "
        f"stays near the weight floor of {spoken(floor)} for hundreds of sequences; it is "
        f"memory-bound "
        f"up to {spoken(turn_q)} and compute-bound beyond, where a step takes {spoken(at)}."
    )
    caption = (
        f"The lecture's central picture, computed: {names['model']} on {spoken(n)} of "
        f"{names['hardware']} (FP8, {context_tokens(length)} of context), batch on a log axis. "
        f"The weight fetch rises while the batch picks up experts (Eᵣ/k = "
        f"{quantity(Q_(saturation, 'sequence'))}) and is then flat at {spoken(floor)}: for "
        f"hundreds of sequences the step hardly grows, and adding sequences is nearly free. "
        f"The step is the larger of compute and memory (dashed: weight fetch plus KV fetch): "
        f"memory-bound (shaded) up to the turn batch, {spoken(turn_q)} (dotted, 'turn'), "
        f"compute-bound beyond. Compute and the KV fetch are straight lines through the origin; "
        f"on the log batch axis they curve upward. The lecture's B* = "
        f"{quantity(Q_(b_star, 'sequence'))} ignores KV reads and attention FLOPs: here they "
        f"move the turn."
    )
    return _render("latency_vs_batch", draw, alt, caption)


def cost_vs_batch(presets: Presets) -> Figure:
    from derivations import get

    ev = Evaluator(presets, **EXAMPLE)
    batches = np.geomspace(1, 1e5, 300)
    kw = dict(EXAMPLE, presets=presets)
    cost = get("cost_per_token").sweep("batch_size", batches, **kw).to("USD/Mtoken").m
    short = dict(kw, context_length=Q_(1, "token/sequence"))
    bare = get("cost_per_token").sweep("batch_size", batches, **short).to("USD/Mtoken").m
    floor = ev.q("compute_cost_floor").to("USD/Mtoken")
    b_star = ev.q("crossover_batch").to("sequence").m
    saturation = ev.q("expert_saturation_batch").to("sequence")
    one = ev.q("cost_per_token", batch_size=1).to("USD/Mtoken")
    at_sat = ev.q("cost_per_token", batch_size=saturation).to("USD/Mtoken")
    length = presets.parameter["context_length"].value.to("token/sequence")

    def draw(fig, ax):
        ax.loglog(
            batches,
            cost,
            linewidth=2.4,
            color=FOREGROUND,
            label=f"{context_tokens(length)} of context",
        )
        ax.loglog(batches, bare, linewidth=1.4, linestyle="--", label="a short context")
        _mark(ax, floor.m, f"compute floor {spoken(floor)}", vertical=False)
        _mark(ax, saturation.m, "batch × k = experts")
        _mark(ax, b_star, "B*")
        ax.set_xlabel("batch size B (sequences)")
        ax.set_ylabel("cost (USD per million tokens)")
        ax.legend(loc="center left")  # below the curves' start, clear of the B* mark

    drop = spoken((one / at_sat).to(""), 2)
    alt = (
        f"Cost per token against batch size, log-log, for the same example: from "
        f"{spoken(one)} at one sequence it falls only {drop} times by "
        f"{spoken(saturation)}, where the batch routes as many tokens as there are experts "
        f"(until then each sequence brings "
        f"its own experts), then as one over the batch toward "
        f"the compute floor of {spoken(floor)} near B*."
    )
    caption = (
        f"An MoE's cost per token falls slowly until its batch routes a token per expert: "
        f"{spoken(one)} at one sequence, only {drop} times less at "
        f"{spoken(saturation)} (routed experts over experts per token), where a dense model's "
        f"would be {number(saturation.m)} times less. Past that it falls as one over the batch, "
        f"to the compute floor ({spoken(floor)}, short "
        f"context) or above it, where attention and the KV cache add their share."
    )
    return _render("cost_vs_batch", draw, alt, caption)


def cost_vs_speed(presets: Presets) -> Figure:
    """What speed costs (editor's pass, issue 22): tokens per second per user against cost per
    million tokens, over batch and chip count, with Fast mode's offer placed on it."""
    from book.chapters.batching import speed_frontier

    f = speed_frontier(presets)
    (s0, c0), (s1, c1) = f["standard"], f["fast"]

    bound = f["floors"]["bound_speed_m"]  # the floors the roofline leaves out

    def draw(fig, ax):
        for i, curve in enumerate(f["curves"]):
            last = i == len(f["curves"]) - 1
            style = dict(color=FOREGROUND if last else PALETTE[i], linewidth=2.4 if last else 1.2)
            # past the bound the roofline's points are unreachable: drawn faint and dotted
            # (reader blo21, fault 7), joined to the reachable part at the bound
            ok = curve["speed"] <= bound
            past = np.r_[False, ok[1:] & ~ok[:-1]] | ~ok
            ax.loglog(
                curve["speed"][ok],
                curve["cost"][ok],
                **style,
                label=f"{curve['chips']} chips" + (" (one NVLink domain)" if last else ""),
            )
            if past.any():
                ax.loglog(curve["speed"][past], curve["cost"][past], ":", alpha=0.45, **style)
        ax.plot([s0], [c0], "o", color=PALETTE[2], markersize=7)
        ax.annotate(
            "standard: B* on the rack",
            (s0, c0),
            xytext=(-10, 10),
            textcoords="offset points",
            fontsize=9,
            ha="right",
        )
        ax.plot([s1], [c1], "*", color=PALETTE[3], markersize=12)
        ax.annotate(
            "Fast mode's offer", (s1, c1), xytext=(8, 4), textcoords="offset points", fontsize=9
        )
        ax.plot([s1], [f["frontier_cost"]], "D", color=PALETTE[3], markersize=6)
        ax.annotate(
            "the frontier at that speed",
            (s1, f["frontier_cost"]),
            xytext=(8, -12),
            textcoords="offset points",
            fontsize=9,
        )
        ax.axvline(bound, color=FOREGROUND, linestyle="--", linewidth=1)
        ax.annotate(
            "bound from expert placement\nand all-to-all latency",
            (bound, 0.04),
            xycoords=ax.get_xaxis_transform(),  # x in data, y in axes fraction: the empty corner
            xytext=(6, 0),
            textcoords="offset points",
            fontsize=8,
            ha="left",
        )
        ax.set_xlabel("speed (tokens per second per user)")
        ax.set_ylabel("cost (USD per million tokens)")
        ax.legend(
            loc="upper left", fontsize=9, title="batch swept from one sequence", title_fontsize=9
        )

    frontier = Q_(f["frontier_cost"], "USD/Mtoken")
    alt = (
        f"Cost per million tokens against tokens per second per user for {f['model']} on "
        f"{f['hardware']} chips at FP8, one curve per chip count, each swept over the batch. "
        f"The standard point, B* on the whole rack, gives {spoken(Q_(s0, 'token/s'))} at "
        f"{spoken(Q_(c0, 'USD/Mtoken'))}; Fast mode's offer sits at "
        f"{spoken(Q_(s1, 'token/s'))} and {spoken(Q_(c1, 'USD/Mtoken'))}, above the frontier's "
        f"{spoken(frontier)} at that speed."
    )
    caption = (
        f"What speed costs, by the roofline: {f['model']} on {f['hardware']} (FP8, "
        f"{context_tokens(presets.parameter['context_length'].value)} of context). Each curve "
        f"sweeps the batch from one sequence (right) up to what the chips hold (left); more "
        f"chips make every step faster at the same cost, up to one NVLink domain. Fast mode's "
        f"offer, its multipliers applied to the standard point, sits above the frontier: at its "
        f"speed the roofline cost is {spoken(frontier)}, not {spoken(Q_(c1, 'USD/Mtoken'))}. "
        f"The dashed line is a bound the roofline leaves out: one sequence's experts sit on a "
        f"few chips and every MoE layer waits for two all-to-alls, so no point right of it is "
        f"reachable (the curves there are dotted and faint)."
    )
    return _render("cost_vs_speed", draw, alt, caption)


def roofline(presets: Presets) -> Figure:
    """One chip's roofline with one matmul placed on it at three batches (editor's pass, issue
    22): decode of one sequence, decode at the crossover batch, and a prefill pass."""
    from book.chapters.batching import MATMUL_CASE, matmul_points, matmul_step_bound

    hw = presets.get("hardware", MATMUL_CASE[0])
    points = matmul_points(presets)
    f = hw.dense_flops_bf16.to("TFLOP/s").m
    w = hw.hbm_bandwidth.to("TB/s").m
    ridge = Evaluator(presets, hw.id).q("ridge_intensity").to("FLOP/byte").m
    intensity = np.geomspace(0.5, 2e4, 300)

    def draw(fig, ax):
        ax.loglog(intensity, np.minimum(f, intensity * w), color=FOREGROUND, linewidth=2.2)
        ax.axvspan(intensity[0], ridge, alpha=0.06, color=PALETTE[1])
        ax.plot([ridge], [f], "o", color=FOREGROUND, markersize=6)
        ax.annotate(
            f"ridge {spoken(Q_(ridge, 'FLOP/byte'))}",
            (ridge, f),
            xytext=(8, 8),
            textcoords="offset points",
            fontsize=9,
        )
        ax.text(2, f * 0.9, "memory-bound", fontsize=9, va="top")
        ax.text(ridge * 3, f * 0.3, "compute-bound", fontsize=9, va="top")
        for i, pt in enumerate(points):
            x = pt["intensity"]
            y = min(f, x * w)
            ax.plot([x], [y], "s", color=PALETTE[i], markersize=7)
            ax.annotate(
                pt["label"],
                (x, y),
                xytext=(6, -16 if i == 1 else -14),
                textcoords="offset points",
                fontsize=9,
                color=PALETTE[i],
            )
        ax.set_xlabel("arithmetic intensity (FLOP per byte of HBM read)")
        ax.set_ylabel(f"attainable BF16 TFLOP/s on one {chip_name(hw)}")

    low, star, high = points
    bound = matmul_step_bound(presets)
    context = presets.parameter["context_length"].value
    alt = (
        f"The roofline of one {hw.name} at BF16: attainable FLOP/s rises with arithmetic "
        f"intensity up to the ridge at {spoken(Q_(ridge, 'FLOP/byte'))}, then is flat at "
        f"{spoken(hw.dense_flops_bf16)}. One matmul of {low['model']} sits at intensity "
        f"{number(low['intensity'], 3)} for one sequence, {number(star['intensity'], 3)} at "
        f"the crossover batch and {number(high['intensity'], 3)} in a prefill pass."
    )
    caption = (
        f"One chip's roofline with one matmul on it: {low['model']}'s MLP up-projection "
        f"(width {number(low['d'])}, MLP width {number(low['d_ff'])}) on an {chip_name(hw)} "
        f"at BF16. "
        f"Its intensity is about the batch: {number(low['intensity'], 3)} FLOP per byte for one "
        f"sequence, {number(star['intensity'], 3)} at B* = {number(star['tokens'])}, just under "
        f"the ridge (this matmul only: with {context_tokens(context)} of KV cache per sequence "
        f"the whole step there is still memory-bound, {number(bound, 2)}×), and "
        f"{number(high['intensity'], 3)} for a prefill of "
        f"{number(high['tokens'])} tokens, where the approximation fails but the step is "
        f"compute-bound anyway."
    )
    return _render("roofline", draw, alt, caption)


def _time_spoken(t) -> str:
    """A time in its natural unit as a person says it: '24 ms', '37 s', '20 min', '23 hours'."""
    t = t.to("s")
    if t.m < 1:
        return spoken(t.to("ms"))
    if t.m < 120:
        return spoken(t)
    return spoken(t.to("minute") if t.m < 7200 else t.to("hour"))


def drain_ladder(presets: Presets) -> Figure:
    """The memory-tier ladder with the verdict on it (reader blo23, fault 5): per tier, one
    device's hold time (the lecture's drain-time rule, a pale bar) and how long holding beats
    recomputing for a Llama-style cache and for the kink-sized one (two markers), against the
    two cache lifetimes. A cache goes to the fastest tier whose marker lies past its lifetime."""
    from book.chapters.long_context import KV_MODEL, breakeven_times

    rows = breakeven_times(presets)
    said_by_lecture = {
        "flash": presets.parameter["lecture_flash_hold"].value,
        "disk": presets.parameter["lecture_disk_hold"].value,
    }
    short = presets.parameter["cache_duration_short"].value
    long = presets.parameter["cache_duration_long"].value
    llama_name = presets.get("model", KV_MODEL).name
    marks = (
        # one colour per cache across the chapter's figures: Llama blue, kink-sized red
        ("llama", "s", PALETTE[0], f"{llama_name}-style"),
        ("kink", "D", PALETTE[3], "kink-sized"),
    )
    left, right = 1e-3, 1e8  # seconds: the axis' ends; "never" sits at the left, no time at all

    def draw(fig, ax):
        fig.set_size_inches(7, 4.2)
        ys = np.arange(len(rows))
        ax.barh(ys, [r["hold"].to("s").m for r in rows], color="#bbbbbb", height=0.28)
        ax.set_yticks(ys, [f"{r['medium']}\n{r['device']}" for r in rows], fontsize=8)
        for y, r in zip(ys, rows, strict=True):
            t = r["hold"].to("s")
            ax.annotate(
                _time_spoken(t),
                (t.m, y),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
                color="#777777",
            )
            guess = said_by_lecture.get(r["medium"])
            if guess is not None:
                ax.plot([guess.to("s").m], [y], "o", mfc="none", mec="#777777", markersize=7)
            for dy, (key, marker, color, _) in zip((-0.3, 0.3), marks, strict=True):
                even = r[key]
                if even is None:  # no time at all: a cross at the axis' left end, not a time
                    edge = dict(xycoords=("axes fraction", "data"), textcoords="offset points")
                    ax.plot(
                        [left], [y + dy], "x", color=color, markersize=7, mew=1.6, clip_on=False
                    )
                    ax.annotate(
                        "never: reading back costs more than recomputing",
                        (0.0, y + dy),
                        xytext=(8, 0),
                        ha="left",
                        va="center",
                        fontsize=8,
                        color=color,
                        bbox=dict(facecolor="white", edgecolor="none", pad=1),
                        **edge,
                    )
                    continue
                ax.plot([even.to("s").m], [y + dy], marker, color=color, markersize=7)
                ax.annotate(
                    _time_spoken(even),
                    (even.to("s").m, y + dy),
                    xytext=(6, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=8,
                    color=color,
                )
        for _, marker, color, label in marks:
            ax.plot([], [], marker, color=color, label=f"holding beats recomputing, {label}")
        ax.plot([], [], color="#bbbbbb", linewidth=6, label="hold time (the lecture's rule)")
        ax.plot([], [], "o", mfc="none", mec="#777777", label="the lecture's guess")
        ax.set_xscale("log")
        ax.set_xlim(left, right)
        ax.set_ylim(len(rows) - 0.5, -0.75)
        for q, side in ((short, "right"), (long, "left")):  # labels apart, each off its line
            ax.axvline(q.to("s").m, color=FOREGROUND, linestyle=":", linewidth=1)
            ax.annotate(
                f"{spoken(q)} cache",
                (q.to("s").m, 1),
                xycoords=("data", "axes fraction"),
                xytext=(-2 if side == "right" else 2, 3),
                textcoords="offset points",
                fontsize=8,
                ha=side,
                va="bottom",
            )
        ax.legend(loc="upper left", bbox_to_anchor=(-0.3, -0.14), fontsize=8, frameon=False, ncol=2)
        ax.set_xlabel("time (seconds, log scale)")
        ax.grid(axis="y", visible=False)

    def home(key, life) -> str:
        """The fastest tier on which holding beats recomputing for the whole lifetime."""
        return next((r["medium"] for r in rows if r[key] is not None and r[key] >= life), "none")

    alt = (
        f"For each memory tier (HBM, DRAM, flash, disk), on a log time axis: a pale bar for the "
        f"device's hold time, and two markers for how long holding a cache there beats "
        f"recomputing it, one for a {llama_name}-style cache and one for the kink-sized cache, "
        f"against dotted lines at the {spoken(short)} and {spoken(long)} cache lifetimes."
    )
    verdict = "; ".join(
        f"the {spoken(life)} cache goes to {home('llama', life)} if {llama_name}-style, "
        f"to {home('kink', life)} if kink-sized"
        for life in (short, long)
    )

    def nearest(life) -> str:
        """The tier whose hold time is nearest ``life`` by ratio: the drain-time rule's pick."""
        return min(rows, key=lambda r: abs(np.log((r["hold"] / life).to("").m)))["medium"]

    picks = {nearest(short), nearest(long)}
    rule = (
        f"points both lifetimes to {nearest(short)}"
        if len(picks) == 1
        else f"points the {spoken(short)} cache to {nearest(short)} and the {spoken(long)} "
        f"cache to {nearest(long)}"
    )
    caption = (
        f"Which tier holds a cache. A cache belongs on the fastest tier whose marker (how long "
        f"holding it there beats recomputing it) lies right of its lifetime's dotted line: "
        f"{verdict}. The pale bars are the lecture's drain-time rule (hold time = capacity / "
        f"bandwidth); picking the bar nearest each lifetime by ratio, it {rule} and cannot "
        f"tell the two caches apart. One device per tier, one rent per tier. A cross marked "
        f'"never", at the left edge, means no time '
        f"at all: reading the cache back from that tier costs more than recomputing it. The "
        f"hollow circles are the lecture's guessed hold times for flash and disk."
    )
    return _render("drain_ladder", draw, alt, caption)


# -- chapters C-D ----------------------------------------------------------------------------


def memory_vs_stages(presets: Presets) -> Figure:
    """Two panels of HBM per chip against stages: a model that fits its rack (DeepSeek-V3 on
    GB200 NVL72, 64 chips of experts) and one that does not fit its node (Kimi K2 on 8 H100s)."""
    from book.chapters import pipeline

    def panel(hw_id, model_id, experts):
        ev = Evaluator(presets, hw_id, model_id, "fp8")
        split = [
            pipeline.memory_split(
                ev,
                pipeline_stages=Q_(p, "stage"),
                **({"expert_parallel_chips": experts} if experts else {}),
            )
            for p in pipeline.STAGES
        ]
        hw = presets.get("hardware", hw_id)
        return {
            "weights": [w.to("GB").m for w, _ in split],
            "kv": [k.to("GB").m for _, k in split],
            "hbm": hw.hbm_capacity.to("GB"),
            "title": f"{presets.get('model', model_id).name} on {chip_name(hw)}",
            "experts": spoken(experts or presets.parameter["expert_parallel_chips"].value),
        }

    fits = panel(pipeline.RACK, pipeline.MODEL, None)
    big_hw = presets.get("hardware", pipeline.TOO_BIG_CHIP)
    big = panel(pipeline.TOO_BIG_CHIP, pipeline.TOO_BIG_MODEL, big_hw.scale_up_domain)

    def draw(fig, ax):
        fig.set_size_inches(9, 4.4)
        fig.delaxes(ax)
        axes = fig.subplots(1, 2)
        x = np.arange(len(pipeline.STAGES))
        for a, d in zip(axes, (fits, big), strict=True):
            a.bar(x, d["weights"], label="weights", color=PALETTE[0])
            a.bar(x, d["kv"], bottom=d["weights"], label="KV cache", color=PALETTE[1])
            top = max(w + k for w, k in zip(d["weights"], d["kv"], strict=True))
            # HBM far above the bars would squash them (the weight slices vanish): give the
            # panel its own scale and name the HBM line above it instead of drawing it
            off_scale = d["hbm"].m > 2 * top
            if off_scale:
                a.set_ylim(0, top * 1.35)
                a.text(
                    0.98,
                    0.97,
                    f"HBM {spoken(d['hbm'])} per chip: far above this scale",
                    transform=a.transAxes,
                    ha="right",
                    va="top",
                    fontsize=9,
                )
            else:
                a.set_ylim(0, max(top, d["hbm"].m) * 1.15)
                a.axhline(d["hbm"].m, color=FOREGROUND, linestyle="--", linewidth=1.2)
                a.annotate(
                    f"HBM\n{spoken(d['hbm'])}",
                    (1, d["hbm"].m),
                    xycoords=("axes fraction", "data"),
                    xytext=(3, 0),
                    textcoords="offset points",
                    ha="left",
                    va="center",
                    fontsize=9,
                )
            a.set_xticks(x, [str(p) for p in pipeline.STAGES])
            a.set_xlabel("pipeline stages P")
            a.set_title(f"{d['title']}\n{d['experts']} of experts per stage", fontsize=9)
        axes[0].set_ylabel("HBM needed per chip (GB)")
        axes[0].legend(loc="upper left", bbox_to_anchor=(0, 0.9), ncols=2)

    def gb(v):
        return spoken(Q_(v, "GB"))

    alt = (
        f"Two panels of stacked bars, HBM per chip against pipeline stages at FP8. Left, "
        f"{fits['title']}: weights shrink from {gb(fits['weights'][0])} to "
        f"{gb(fits['weights'][-1])}, the KV cache stays {gb(fits['kv'][0])}, all well under "
        f"{spoken(fits['hbm'])}. Right, {big['title']}: weights shrink from "
        f"{gb(big['weights'][0])} to {gb(big['weights'][-1])} but the KV cache stays "
        f"{gb(big['kv'][0])}, far above {spoken(big['hbm'])}."
    )
    caption = (
        f"Pipelining divides the weights (blue) by the stage count; the KV cache (orange) per chip "
        f"does not move, because as many micro-batches are in flight as stages. Left: "
        f"{fits['title']} fits in one stage. Right: {big['title']} needs stages for its weights, "
        f"but the KV cache of a crossover micro-batch, {gb(big['kv'][0])} per chip, overflows "
        f"{spoken(big['hbm'])} at every stage count."
    )
    return _render("memory_vs_stages", draw, alt, caption)


SCHEDULE_NAMES = {
    "gpipe": "GPipe (all forwards, then all backwards)",
    "1f1b": "1F1B (one forward, one backward)",
}


def _idle_slots(ax, stage: int, width: float) -> None:
    """A pipeline stage's idle time from the step's start, hatched (the bubble, the first fill)."""
    from matplotlib.patches import Rectangle

    box = Rectangle((0, stage - 0.4), width, 0.8, facecolor="none", edgecolor=FOREGROUND)
    box.set(hatch="////", linewidth=0, alpha=0.35)
    ax.add_artist(box)  # the schedules set both limits (see _pass_box)


def _pass_box(ax, x, colour, label: int | None, fontsize: float, alpha: float = 1.0) -> None:
    """One pass of a pipeline schedule (``x``: its stage, start and end) as a box, numbered
    unless ``label`` is None.

    The box is added as an artist, not a patch: the same box, clipped and drawn the same, but
    not stretching the axes' data limits, which the schedules never read (they set both limits
    themselves); measuring each box for them was a fifth of drawing the training schedule."""
    from matplotlib.patches import Rectangle

    width = x.end - x.start
    box = Rectangle((x.start, x.stage - 0.4), width, 0.8, facecolor=colour, edgecolor="white")
    box.set(linewidth=0.6, alpha=alpha)
    ax.add_artist(box)
    if label is None:
        return
    middle = (x.start + x.end) / 2
    ax.text(
        middle,
        x.stage,
        str(label),
        ha="center",
        va="center",
        fontsize=fontsize,
        fontweight="bold",
        color="white",
    )


def pipeline_schedule(presets: Presets) -> Figure:
    """One training step slot by slot: P stages down, time across, each micro-batch's forward
    and backward pass a box, the bubble hatched; GPipe above, 1F1B below. The schedule is placed
    pass by pass from its dependencies (:func:`book.chapters.pipeline.schedule`); the bubble
    printed on it is the chapter's equation at the same P and m."""
    from matplotlib.patches import Patch

    from book.chapters import pipeline

    p = round(presets.parameter["pipeline_stages"].value.m)
    m = round(presets.parameter["microbatches"].value.to("").m)
    back = pipeline.backward_cost()
    bubble = pipeline.percent(Evaluator(presets).q("pipeline_bubble_fraction"))
    steps = {kind: pipeline.schedule(kind, p, m, back) for kind in pipeline.SCHEDULES}
    held = {kind: pipeline.peak_in_flight(passes) for kind, passes in steps.items()}
    span = max(x.end for x in steps["gpipe"])
    colour = {False: PALETTE[0], True: PALETTE[1]}

    def draw(fig, ax):
        fig.set_size_inches(9, 6.4)
        fig.delaxes(ax)
        axes = fig.subplots(2, 1, sharex=True)
        for a, (kind, passes) in zip(axes, steps.items(), strict=True):
            for s in range(p):
                _idle_slots(a, s, span)
            for x in passes:
                # a forward box is a third of a slot, too narrow for a legible number: only the
                # backward boxes are numbered (each follows its micro-batch's forward on the stage)
                label = x.microbatch + 1 if x.backward else None
                _pass_box(a, x, colour[x.backward], label, 9)
            a.set_xlim(0, span)
            slot = 1 + back
            a.set_xticks(
                [i * slot for i in range(round(span / slot) + 1)],
                [str(i) for i in range(round(span / slot) + 1)],
            )
            a.set_ylim(p - 0.5, -0.5)
            a.set_yticks(range(p), [f"stage {s + 1}" for s in range(p)])
            a.grid(False)
            a.set_title(
                f"{SCHEDULE_NAMES[kind]}: bubble {bubble} of each stage's time; "
                f"stage 1 holds up to {held[kind]} micro-batches' activations",
                fontsize=9,
                loc="left",
            )
        axes[-1].set_xlabel(
            "time, in forward-and-backward slots of one micro-batch on one stage "
            f"(one slot = {spoken_number(1 + back)} forward passes)"
        )
        axes[0].legend(
            handles=[
                Patch(facecolor=colour[False], label="forward"),
                Patch(facecolor=colour[True], label=f"backward ({spoken_number(back)}× a forward)"),
                Patch(
                    facecolor="none", edgecolor=FOREGROUND, hatch="////", label="idle: the bubble"
                ),
            ],
            loc="lower left",
            bbox_to_anchor=(0, 1.12),
            ncols=3,
            fontsize=9,
        )

    alt = (
        f"Two timelines of one training step on {p} pipeline stages with {m} micro-batches, "
        f"forward passes in blue and backward passes, {spoken_number(back)} times as long, in "
        f"orange, idle time hatched. Above, GPipe: every stage runs all its forwards, then all its "
        f"backwards; stage 1 waits through the fill and drain. Below, 1F1B: backwards start as "
        f"early as possible. Both steps take {spoken_number(span)} forward-pass slots and both "
        f"leave each stage idle {bubble} of the time; stage 1 holds {held['gpipe']} micro-batches' "
        f"activations under GPipe, {held['1f1b']} under 1F1B."
    )
    caption = (
        f"One training step on {p} stages with {m} micro-batches (numbered on their backward "
        f"passes), each pass started as "
        f"soon as its input is ready. The hatched fill and drain are the bubble: {p - 1} slots "
        f"of {m + p - 1} forward-and-backward slots on every stage, "
        f"(P − 1)/(m + P − 1) = {bubble}. 1F1B does not shrink it; it starts each backward early, "
        f"so stage 1 holds {held['1f1b']} micro-batches' activations instead of {held['gpipe']}."
    )
    return _render("pipeline_schedule", draw, alt, caption)


INFERENCE_TOKENS = 3  # tokens per micro-batch drawn: enough to show the line never stops


def pipeline_inference(presets: Presets) -> Figure:
    """Pipelined decoding slot by slot: P micro-batches rotate through P stages, each token of a
    micro-batch entering stage 1 as its previous token leaves the last stage, so after the
    first fill no stage idles (:func:`book.chapters.pipeline.inference_schedule`)."""
    from matplotlib.patches import Patch

    from book.chapters import pipeline

    p = round(presets.parameter["pipeline_stages"].value.m)
    passes = pipeline.inference_schedule(p, INFERENCE_TOKENS)
    span = max(x.end for x in passes)

    def draw(fig, ax):
        fig.set_size_inches(9, 2.9)
        for s in range(p):  # the first fill: stage s waits s slots for its first micro-batch
            if s:
                _idle_slots(ax, s, s)
        for x in passes:
            micro, token = x.microbatch % p, x.microbatch // p
            _pass_box(ax, x, PALETTE[micro % len(PALETTE)], micro + 1, 8, 1.0 - 0.22 * token)
        ax.set_xlim(0, span)
        ax.set_ylim(p - 0.5, -0.5)
        ax.set_yticks(range(p), [f"stage {s + 1}" for s in range(p)])
        ax.set_xlabel("time, in slots of one stage's share of a decode step")
        ax.grid(False)
        ax.legend(
            handles=[Patch(facecolor=PALETTE[i], label=f"micro-batch {i + 1}") for i in range(p)]
            + [Patch(facecolor="none", edgecolor=FOREGROUND, hatch="////", label="first fill")],
            loc="lower left",
            bbox_to_anchor=(0, 1.02),
            ncols=p + 1,
            fontsize=8,
        )

    alt = (
        f"A timeline of pipelined decoding on {p} stages with {p} micro-batches, each a colour, "
        f"over {INFERENCE_TOKENS} tokens each (later tokens paler). Micro-batch 1's next token "
        f"enters stage 1 in the slot after its previous token leaves stage {p}, and the other "
        f"micro-batches fill the stages meanwhile: after the first fill, hatched, no stage is "
        f"ever idle."
    )
    caption = (
        f"Decoding on {p} stages with {p} micro-batches in flight (numbered; each later token of "
        f"a micro-batch paler). A token of micro-batch 1 leaves stage {p} just as its next token "
        f"is due at stage 1, so the line never stops: only the first fill is idle, and there is "
        f"no bubble to drain, because no step waits for a weight update. The hops between "
        f"stages are drawn as taking no time; real ones leave a gap each round unless a micro-"
        f"batch or two more are in flight (see the hop section)."
    )
    return _render("pipeline_inference", draw, alt, caption)


BUBBLE_STAGES = (2, 4, 8, 16)


def pipeline_bubble(presets: Presets) -> Figure:
    from book.chapters.pipeline import percent
    from derivations import get

    micro = np.geomspace(1, 256, 100)
    ev = Evaluator(presets)
    default = ev.q("pipeline_bubble_fraction")

    def draw(fig, ax):
        for p in BUBBLE_STAGES:
            y = (
                get("pipeline_bubble_fraction")
                .sweep("microbatches", micro, presets=presets, pipeline_stages=Q_(p, "stage"))
                .m
            )
            ax.semilogx(micro, 100 * y, label=f"P = {p}", linewidth=1.6)
        p0 = presets.parameter["pipeline_stages"].value.m
        m0 = presets.parameter["microbatches"].value.to("").m
        ax.plot([m0], [100 * default.m], "o", color=FOREGROUND, markersize=5)
        # the label sits in the empty band above the curves' tails, an arrow to its point
        ax.annotate(
            f"P = {p0:g}, m = {m0:g}: {percent(default)} idle",
            (m0, 100 * default.m),
            xytext=(0.6, 0.6),
            textcoords="axes fraction",
            fontsize=9,
            arrowprops=dict(arrowstyle="-", color=FOREGROUND, linewidth=0.8),
        )
        from matplotlib.ticker import StrMethodFormatter

        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))  # 1, 10, 100 (picklable)
        ax.set_xlabel("micro-batches per step m")
        ax.set_ylabel("bubble, % of each stage's time")
        ax.set_ylim(0, 100)
        ax.legend(loc="upper right")

    alt = (
        "Bubble fraction of a fill-and-drain pipeline against micro-batches for "
        f"{BUBBLE_STAGES[0]} to {BUBBLE_STAGES[-1]} stages: "
        "each curve falls from near one toward zero as micro-batches grow."
    )
    caption = (
        "The share of each stage's time lost to filling and draining the pipeline in a training "
        "step: more stages raise it, more micro-batches per step lower it. At the marked default "
        f"it is {percent(default)} of a step."
    )
    return _render("pipeline_bubble", draw, alt, caption)


# -- chapter E -------------------------------------------------------------------------------


def chinchilla_contours(presets: Presets) -> Figure:
    from book.chapters.overtraining import cheapest_at_loss
    from derivations import get

    # the Epoch refit draws the contours; the published Hoffmann fit's path is drawn beside it
    # (Besiroglu et al. 2024 found its parameters inconsistent with Hoffmann's own approaches)
    fit = list(presets.fit.values())[-1]
    other = next(iter(presets.fit.values()))
    n = np.geomspace(1e9, 2e12, 120)
    d = np.geomspace(1e11, 1e15, 120)
    nn, dd = np.meshgrid(n, d)
    loss = (
        get("chinchilla_loss")
        .evaluate(
            presets=presets,
            fit=fit.id,
            n_active=Q_(nn.ravel(), "parameter"),
            training_tokens=Q_(dd.ravel(), "token"),
        )
        .m.reshape(nn.shape)
    )
    budgets = np.geomspace(1e21, 1e27, 50)
    c = Q_(budgets, "FLOP")
    n_star = (
        get("compute_optimal_params")
        .evaluate(presets=presets, fit=fit.id, training_flops=c)
        .to("parameter")
        .m
    )
    d_star = (
        get("compute_optimal_tokens")
        .evaluate(presets=presets, fit=fit.id, training_flops=c)
        .to("token")
        .m
    )
    keep = (n_star >= n[0]) & (n_star <= n[-1]) & (d_star >= d[0]) & (d_star <= d[-1])
    n_star, d_star = n_star[keep], d_star[keep]
    other_n, other_d = (
        get(eq).evaluate(presets=presets, fit=other.id, training_flops=c).to(u).m
        for eq, u in (("compute_optimal_params", "parameter"), ("compute_optimal_tokens", "token"))
    )
    inside = (other_n >= n[0]) & (other_n <= n[-1]) & (other_d >= d[0]) & (other_d <= d[-1])
    other_n, other_d = other_n[inside], other_d[inside]
    plain = Evaluator(presets)
    frontier_q = presets.parameter["frontier_active_params"].value
    frontier = frontier_q.to("parameter").m
    balanced = plain.q("balanced_training_tokens").to("token").m
    chin_n = presets.parameter["chinchilla_model_params"].value.to("parameter").m
    chin_d = presets.parameter["chinchilla_model_tokens"].value.to("token").m
    rule = presets.parameter["chinchilla_tokens_per_param"].value
    rule_d = (rule * Q_(n, "parameter")).to("token").m  # D = 20 N along the axis
    at_rule = (rule * frontier_q).to("token").m
    factor = Evaluator(presets, n_active=frontier_q).q("balanced_overtraining_factor")
    # the drawn line's tokens at the frontier model's size: N* is a power of the budget, so two
    # budgets fix it exactly
    power = np.log(n_star[-1] / n_star[0]) / np.log(budgets[keep][-1] / budgets[keep][0])
    budget = budgets[keep][0] * (frontier / n_star[0]) ** (1 / power)
    d_line = (
        get("compute_optimal_tokens")
        .evaluate(presets=presets, fit=fit.id, training_flops=Q_(budget, "FLOP"))
        .to("token")
        .m
    )
    above = Q_(balanced / d_line, "")
    # the equal-cost model's loss, and the cheapest model (training, RL and serving) reaching it
    d_pre = plain.q("balanced_training_tokens")
    target, best_n, best_d, _, _ = cheapest_at_loss(
        presets,
        fit.id,
        frontier_q,
        d_pre,
        plain.q("inference_tokens"),
        d_pre / plain.q("pretrain_rl_token_ratio"),
    )

    short = f"{fit.id.split('_')[0].capitalize()} fit:"  # as the chapter's prose names the fits
    other_short = f"{other.id.split('_')[0].capitalize()} fit:"

    def bracket(ax, x, low, high, text, side, at=0.5):
        """A vertical bracket at ``x`` from ``low`` to ``high`` tokens, labelled on ``side`` at
        the fraction ``at`` of its height (on the log axis)."""
        ax.annotate(
            "",
            (x, low),
            (x, high),
            arrowprops=dict(arrowstyle="|-|", color=PALETTE[3], linewidth=1, shrinkA=0, shrinkB=0),
        )
        ax.annotate(
            text,
            (x, low ** (1 - at) * high**at),
            xytext=(-5 if side == "left" else 5, 0),
            textcoords="offset points",
            ha="right" if side == "left" else "left",
            va="center",
            color=PALETTE[3],
            fontsize=9,
            fontweight="bold",
        )

    def draw(fig, ax):
        from matplotlib.lines import Line2D

        fig.set_size_inches(7, 5.6)
        cs = ax.contour(nn, dd, loss, levels=12, linewidths=0.8, cmap="viridis")
        # matplotlib's own label places, less those it puts so near the top or right frame
        # that the label is clipped; the rest are labelled there, with the line broken for them
        edge = 0.12  # decades
        places = []
        for text in ax.clabel(cs, fontsize=7, fmt="%.2f", inline=False):
            x, y = text.get_position()
            if np.log10(n[-1] / x) >= edge and np.log10(d[-1] / y) >= edge:
                places.append((x, y))
            text.remove()
        ax.clabel(cs, fontsize=7, fmt="%.2f", manual=places)
        ax.contour(nn, dd, loss, levels=[target], linewidths=2.4, colors=[PALETTE[1]])
        ax.loglog(n_star, d_star, color=FOREGROUND, linewidth=2)
        ax.plot(other_n, other_d, color=FOREGROUND, linewidth=0.9, linestyle="-.")
        ax.plot(n, rule_d, color=FOREGROUND, linewidth=1.2, linestyle="--")
        ax.plot([chin_n], [chin_d], "s", color=PALETTE[2])
        ax.plot([frontier], [d_line], "D", color=FOREGROUND)
        bracket(
            ax,
            frontier,
            d_line,
            balanced,
            f"{spoken_number(above.m)}×\nthe fit's\noptimum",
            "right",
            at=0.35,
        )
        # the rule's bracket stands beside the first (their feet are a tenth apart); dotted
        # rungs carry its foot and top across to the frontier model's size
        left = frontier / 1.9
        for level in (at_rule, balanced):
            ax.plot([left, frontier], [level, level], color=PALETTE[3], linewidth=0.8, ls=":")
        bracket(ax, left, at_rule, balanced, f"{spoken_number(factor.m)}×\nthe rule", "left")
        ax.plot([best_n], [best_d], "*", color=PALETTE[1], markersize=14, mec=FOREGROUND, zorder=4)
        ax.plot([frontier], [balanced], "o", color=PALETTE[3], markersize=5, zorder=5)
        ax.set_xlim(n[0], n[-1])
        ax.set_ylim(d[0], d[-1])
        ax.set_xlabel("active parameters N")
        ax.set_ylabel("pre-training tokens D")
        handles = [
            Line2D([], [], color=VIRIDIS_MID, linewidth=0.8),
            Line2D([], [], color=FOREGROUND, linewidth=2),
            Line2D([], [], color=FOREGROUND, linewidth=0.9, linestyle="-."),
            Line2D([], [], color=FOREGROUND, linewidth=1.2, linestyle="--"),
            Line2D([], [], color=PALETTE[2], marker="s", linestyle=""),
            Line2D([], [], color=PALETTE[3], marker="o", linestyle=""),
            Line2D([], [], color=FOREGROUND, marker="D", linestyle=""),
            Line2D([], [], color=PALETTE[1], linewidth=2.4),
            Line2D([], [], color=PALETTE[1], marker="*", markersize=12, mec=FOREGROUND, ls=""),
        ]
        size = spoken(frontier_q.to("Gparameter"))
        labels = [
            f"{short} loss contours (labelled with the loss)",
            f"{short} compute-optimal path (N*, D*)",
            f"published {other_short} compute-optimal path",
            f"D = {spoken_number(rule.m)} N, the rule of thumb",
            f"Chinchilla: {spoken(Q_(chin_n, 'parameter').to('Gparameter'))} "
            f"on {spoken(Q_(chin_d, 'token'))}",
            f"equal-cost frontier model, {size}",
            f"{short} optimum for {size}",
            f"every model at the frontier model's loss, {number(target, 4)}",
            "the cheapest of those to train, RL and serve",
        ]
        ax.legend(
            handles,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.13),
            ncol=2,
            fontsize=8,
        )

    per_param = spoken(rule)
    alt = (
        f"Loss contours of the {fit.name} fit over parameters and tokens, with the fit's "
        f"compute-optimal path, the rule of {per_param}, Chinchilla's own point, and the "
        f"lecture's frontier model {spoken(factor)} times past the rule and {spoken(above)} "
        f"times above the drawn compute-optimal line at its size, and the {other.name} fit's "
        f"path beside it; the contour of its loss, "
        f"{number(target, 4)}, is drawn thick, with the cheapest model on it at "
        f"{spoken(Q_(best_n, 'parameter'))} and {spoken(Q_(best_d, 'token'))}."
    )
    caption = (
        f"Loss contours of the {fit.name} fit. The bold line is the fit's compute-optimal "
        f"path, the dash-dotted one the published Hoffmann fit's, the dashed line the rule of "
        f"{per_param}. The brackets measure the equal-cost frontier model (red) against each at "
        f"its size: against the path's optimum (the diamond) and against the rule. The thick "
        f"contour holds every model that reaches its loss; the star is the cheapest of them to "
        f"train, RL and serve."
    )
    return _render("chinchilla_contours", draw, alt, caption)


def equal_cost_heuristic(presets: Presets) -> Figure:
    """Total compute (pre-training plus serving) of the models that reach the equal-cost frontier
    model's loss, against their ratio of training to serving compute, under each fit."""
    from book.chapters.overtraining import iso_loss_costs

    plain = Evaluator(presets)
    n0 = presets.parameter["frontier_active_params"].value
    d_pre, d_inf = plain.q("balanced_training_tokens"), plain.q("inference_tokens")
    d_rl = d_pre / plain.q("pretrain_rl_token_ratio")  # RL's tokens held, like the served ones
    curves = []
    for fit in presets.fit.values():
        sizes = np.geomspace(n0.to("parameter").m / 2, n0.to("parameter").m * 4, 3000)
        tokens, train, serve = iso_loss_costs(presets, fit.id, n0, d_pre, d_inf, sizes, d_rl)
        total = train + serve
        share, rel = train / serve, total / total.min()
        keep = (tokens < 1e18) & (share > 0.05) & (share < 20)  # the loss is reachable
        curves.append((fit, share[keep], rel[keep], int(np.argmin(total[keep]))))
    # where the lecture's equal thirds sit: pre-training against serving plus RL
    ev = Evaluator(presets, n_active=n0)
    rule = (
        (
            ev.q("training_flops", training_tokens=d_pre)
            / (ev.q("inference_flops", inference_tokens=d_inf) + ev.q("rl_flops", rl_tokens=d_rl))
        )
        .to("")
        .m
    )

    def draw(fig, ax):
        for k, (fit, share, rel, i) in enumerate(curves):
            label = f"{fit.id.split('_')[0].capitalize()} fit"  # as the chapter names it
            ax.semilogx(share, rel, color=PALETTE[k], linewidth=2, label=label)
            ax.plot([share[i]], [rel[i]], "o", color=PALETTE[k])
        _mark(ax, rule, "equal thirds")
        ax.set_xlabel("pre-training compute / (serving + RL compute), pre-training at full peak")
        ax.set_ylabel("total compute / the cheapest")
        ax.set_xlim(0.05, 20)
        ax.set_ylim(0.95, 2.0)
        ax.legend(loc="center right", fontsize=8)

    shares = " and ".join(
        f"{spoken(Q_(share[i], ''), 2)} under the {fit.name}" for fit, share, _, i in curves
    )
    extra = " and ".join(  # the equal-cost model's excess, read off each curve at the rule's ratio
        f"{number(100 * (np.interp(np.log(rule), np.log(share[::-1]), rel[::-1]) - 1), 2)} per cent"
        for _, share, rel, _ in curves  # share falls as the model grows: reversed, it rises
    )
    alt = (
        f"Total compute of the models that reach the equal-cost frontier model's loss, against "
        f"their ratio of training to serving and RL compute: the cheapest spends {shares}; at "
        f"equal "
        f"cost the total is {extra} above the cheapest."
    )
    caption = (
        "Every model that reaches the equal-cost frontier model's loss, placed by its "
        "pre-training compute over its serving and RL compute, with its total (pre-training, "
        "RL and serving) over the cheapest one's, for each fit, in the lecture's accounting "
        "(chip-time, pre-training at full peak, RL and serving at a third). Dots: the cheapest "
        "split; dotted line: the lecture's equal thirds. Near their minima the curves are flat."
    )
    return _render("equal_cost_heuristic", draw, alt, caption)


# -- chapter F -------------------------------------------------------------------------------


def cost_vs_context(presets: Presets) -> Figure:
    """Evidence beside the assumption (reader's report: the old curve was built to kink at the
    price step): real models' chip time per input and per output token against the context,
    the list's two price steps drawn as data, and the kink-sized cache as the one inferred
    curve whose decode cost turns at the step."""
    from book.chapters.long_context import (
        FIGURE_END_CONTEXT,
        HARDWARE,
        STEP_MODELS,
        _kink_evaluator,
        cost_growth,
        growth_contexts,
    )

    contexts = np.geomspace(1e3, FIGURE_END_CONTEXT, 400)
    kink = presets.parameter["price_kink_context"].value.to("token/sequence")
    short, long_ = presets.get("api", "gemini_2_5_pro"), presets.get("api", "gemini_2_5_pro_long")
    steps = {
        "input": (long_.input / short.input).to("").m,
        "output": (long_.output / short.output).to("").m,
    }
    hw = presets.get("hardware", HARDWARE)
    implied = _kink_evaluator(presets, HARDWARE).fixed["kv_bytes_per_token"]
    said_k = spoken(implied.to("kB/token"), most=2)
    names = [presets.get("model", m).name for m in STEP_MODELS]
    real = [cost_growth(growth_contexts(presets, m), contexts) for m in STEP_MODELS]
    _, inferred = cost_growth(growth_contexts(presets), contexts)
    api = short.name.split(",")[0]
    # the MLA model's prefill break-even: why its input curve rises furthest (reader lr29)
    mla = next(m for m in STEP_MODELS if presets.get("model", m).attention == "mla")
    mla_name, mla_prefill = presets.get("model", mla).name, growth_contexts(presets, mla)["prefill"]

    def draw(fig, ax):
        fig.set_size_inches(7, 4.6)
        fig.delaxes(ax)  # two panels sharing the cost axis
        ax, right = fig.subplots(1, 2, sharey=True)
        panels = ((ax, 0, "input"), (right, 1, "output"))
        for axis, which, side in panels:
            for name, curves, color in zip(names, real, PALETTE[:3], strict=True):
                axis.loglog(contexts, curves[which], color=color, linewidth=1.6, label=name)
            price = np.where(contexts > kink.m, steps[side], 1.0)
            axis.loglog(
                contexts,
                price,
                color=FOREGROUND,
                linewidth=2.6,
                label=f"{api} price list",
            )
            axis.axvline(kink.m, color=FOREGROUND, linestyle=":", linewidth=1)
            axis.set_xlabel("context (tokens)")
            axis.set_ylim(0.7, 3000)
            axis.title.set_fontsize(10)
        right.loglog(
            contexts,
            inferred,
            color=PALETTE[3],
            linestyle="--",
            linewidth=1.8,
            label=f"inferred, not data:\n{said_k} (right)",
        )
        ax.set_title(f"per input token (prefill), list: {spoken_number(steps['input'])}×")
        right.set_title(f"per output token (decode), list: {spoken_number(steps['output'])}×")
        ax.set_ylabel("chip time per token ÷ its time with no context")
        handles, labels = right.get_legend_handles_labels()
        ax.legend(handles, labels, loc="upper left", fontsize=8, frameon=False)
        for axis in (ax, right):
            axis.annotate(
                context_tokens(kink),
                (kink.m, 1),
                xycoords=("data", "axes fraction"),
                xytext=(3, -28),
                textcoords="offset points",
                fontsize=8,
                rotation=90,
                va="top",
            )

    at = [cost_growth(growth_contexts(presets, m), kink.m) for m in STEP_MODELS]
    low, high = (spoken_number(f([d for _, d in at]), most=2) for f in (min, max))
    span = low if low == high else f"{low} to {high}"  # the chapter table's output column
    alt = (
        f"Two log-log panels of chip time per token against context on {chip_name(hw)} at FP8, "
        f"over each model's time with no context, with {api}'s price kinks at "
        f"{context_tokens(kink)} drawn as data. Per input token (prefill): at the kink "
        + ", ".join(f"{n} {spoken_number(p, most=2)}×" for n, (p, _) in zip(names, at, strict=True))
        + f", against an input price kink of {spoken_number(steps['input'])}×. Per output token "
        "(decode): "
        + ", ".join(f"{n} {spoken_number(d, most=2)}×" for n, (_, d) in zip(names, at, strict=True))
        + f", against an output kink of {spoken_number(steps['output'])}×; the inferred "
        f"{said_k} cache is flat until the kink and rises after it."
    )
    caption = (
        f"What the price kinks can and cannot be ({chip_name(hw)}, FP8, weights amortised over "
        f"a large batch; each curve over its own model's chip time with no context). Left: a "
        f"prompt token's cost grows with the prompt through attention's FLOPs alone, and a "
        f"dense model of {names[1]}'s shape pays about the input kink's "
        f"{spoken_number(steps['input'])}× at {context_tokens(kink)}. Right: a decoded token "
        f"reads the whole cache, and every real cache makes decode {span} times "
        f"dearer at the kink than with no context, while the list's price is flat up to the "
        f"kink and only then rises {spoken_number(steps['output'])}×. The dashed curve is not "
        f"data: it is the one KV "
        f"size ({said_k}, {spoken(presets.parameter['frontier_active_params'].value)} active) "
        f"whose decode cost turns exactly at the kink, the reading of the output kink above. "
        f"Past the kink it keeps rising, to {spoken_number(inferred[-1], most=2)}× at "
        f"{context_tokens(Q_(contexts[-1], 'token/sequence'))}, while the list stays at "
        f"{spoken_number(steps['output'])}×: one flat price above the kink averages a cost "
        f"that grows with the prompt, so it undercharges the longest prompts. {mla_name} rises "
        f"furthest on the left because its prefill attention matches its weights' FLOPs already "
        f"at {context_tokens(Q_(mla_prefill, 'token/sequence'), 2)}: that is {mla_name}'s own "
        f"attention and active size, not the kink-sized model's."
    )
    return _render("cost_vs_context", draw, alt, caption)


def kv_cache_mechanism(presets: Presets) -> Figure:
    """What a decode step reads (reader's report: the scaling book wins on mechanism diagrams):
    one sequence's KV cache as a grid, a column per context token, and the new token's
    queries reading every column, beside the weights that the whole batch shares."""
    from matplotlib.patches import FancyArrowPatch, Rectangle

    from book.chapters.long_context import HARDWARE, KV_MODEL

    model = presets.get("model", KV_MODEL)
    ev = Evaluator(presets, HARDWARE, KV_MODEL, precision="fp8")
    per_token = ev.q("kv_bytes_per_token").to("kB/token")
    kink = presets.parameter["price_kink_context"].value.to("token/sequence")
    read = (per_token * kink * Q_(1, "sequence")).to("GB")
    weights = (model.params_active * presets.get("precision", "fp8").bytes_per_value).to("GB")
    columns, rows = 14, 6  # drawn cells, not counts: the labels carry the counts

    def draw(fig, ax):
        fig.set_size_inches(7, 3.9)
        ax.set_xlim(-1.6, 15.4)
        ax.set_ylim(-2.6, 7.6)
        ax.axis("off")
        for c in range(columns):
            if c == columns - 4:
                continue  # the gap that stands for the columns not drawn
            new = c == columns - 1
            for r in range(rows):
                ax.add_patch(
                    Rectangle(
                        (c * 0.62, r * 0.82),
                        0.56,
                        0.76,
                        facecolor=PALETTE[1] if new else PALETTE[0],
                        alpha=0.95 if new else 0.35,
                        edgecolor="none",
                    )
                )
        ax.text(
            (columns - 4) * 0.62 + 0.28, rows * 0.82 / 2, "…", ha="center", va="center", fontsize=14
        )
        ax.text(
            -0.2, rows * 0.82 - 0.4, f"layer {model.layers}", ha="right", va="center", fontsize=8
        )
        ax.text(-0.2, 0.4, "layer 1", ha="right", va="center", fontsize=8)
        width = columns * 0.62
        ax.annotate(
            "",
            (0, -0.3),
            (width - 0.66, -0.3),
            arrowprops=dict(arrowstyle="<->", color=FOREGROUND, linewidth=1),
        )
        ax.text(
            (width - 0.66) / 2,
            -0.5,
            f"context: one column per token, {context_tokens(kink)} at the price kink",
            ha="center",
            va="top",
            fontsize=8.5,
        )
        ax.text(
            width - 0.34,
            rows * 0.82 + 0.25,
            f"new token writes one column:\n{model.layers} layers × {model.n_kv_heads} KV heads "
            f"× (key + value)\n× {model.head_dim} values × 1 byte (FP8) = "
            f"{spoken(per_token, most=3).replace(' per token', '')}",
            ha="center",
            va="bottom",
            fontsize=8.5,
        )
        ax.add_patch(
            FancyArrowPatch(
                (width - 0.34, rows * 0.82 / 2),
                (0.05, rows * 0.82 / 2),
                arrowstyle="-|>",
                mutation_scale=14,
                color=PALETTE[3],
                linewidth=2,
            )
        )
        ax.text(
            width + 0.2,
            2.75,
            "its queries read\nevery column:",
            ha="left",
            va="bottom",
            fontsize=8.5,
            color=PALETTE[3],
        )
        ax.text(
            width + 0.2,
            2.0,
            f"{spoken(read, most=2)} per\ntoken generated,\nfor this sequence\nalone",
            ha="left",
            va="top",
            fontsize=8.5,
            color=PALETTE[3],
        )
        ax.add_patch(
            Rectangle((-1.5, -2.4), 16.8, 0.9, facecolor=PALETTE[2], alpha=0.35, edgecolor="none")
        )
        ax.text(
            6.9,
            -1.95,
            f"the weights: {spoken(weights, most=2)} at FP8, read once per step and shared by "
            "every sequence in the batch",
            ha="center",
            va="center",
            fontsize=8.5,
        )

    alt = (
        f"A decode step for one {model.name} sequence: its KV cache drawn as a grid with one "
        f"column per context token and one row per layer. The new token writes one column of "
        f"{spoken(per_token, most=3)} at FP8 and its queries read every column, "
        f"{spoken(read, most=2)} at {context_tokens(kink)}; below, the weights, "
        f"{spoken(weights, most=2)}, are read once per step for the whole batch."
    )
    share = spoken_number((read / weights).to("").m, most=2)
    caption = (
        f"What a decode step reads ({model.name}, FP8). Each sequence keeps its own cache, a "
        f"column of keys and values per token of context; every new token reads all of it. The "
        f"weights are read once per step however many sequences share it, so batching amortises "
        f"them, but never the caches: at {context_tokens(kink)} one sequence's read, "
        f"{spoken(read, most=2)}, is {share} of the weights' {spoken(weights, most=2)}, and "
        f"every sequence in the batch adds its own."
    )
    return _render("kv_cache_mechanism", draw, alt, caption)


def kv_routes(presets: Presets) -> Figure:
    """The routes to a small KV cache (reader's report: "how a token can cost only about two
    kilobytes" had only formulas): bytes per token of context at an FP8 cache, each bar labelled
    with the factors that make it, against the bytes a price kink implies."""
    from book.chapters.long_context import HARDWARE, KV_MODEL, WINDOW_MODEL, _kink_evaluator

    mla_model = "deepseek_v3"
    kink = _kink_evaluator(presets, HARDWARE).fixed["kv_bytes_per_token"].to("byte/token")

    def kv(model: str, **over):
        ev = Evaluator(presets, HARDWARE, model, precision="fp8")
        return ev.q("kv_bytes_per_token", **over).to("byte/token")

    llama, window, mla = (presets.get("model", m) for m in (KV_MODEL, WINDOW_MODEL, mla_model))
    full = kv(KV_MODEL)
    globals_ = Evaluator(presets, HARDWARE, WINDOW_MODEL).q("global_attention_layers").m
    heads = f"{llama.n_kv_heads} KV heads × 2 × {llama.head_dim}"
    sparsity = (full / kink).to("").m
    bars = [
        (f"{llama.name}\n{llama.layers} layers × {heads}", full, False),
        (
            f"{window.name}, sliding windows\n{spoken_number(globals_)} of {window.layers} "
            f"layers × {window.n_kv_heads} × 2 × {window.head_dim}",
            kv(WINDOW_MODEL),
            False,
        ),
        (
            f"{mla.name}, MLA\n{mla.layers} layers × ({mla.kv_lora_rank} + {mla.qk_rope_head_dim})",
            kv(mla_model),
            False,
        ),
        (
            f"one global layer, the rest windowed\n1 × {heads}",
            kv(KV_MODEL, global_layers=1),
            False,
        ),
        (
            f"sparse read of {llama.name}'s cache\n1 token in "
            f"{spoken_number(sparsity, most=2)}: chosen to match the kink",
            full / sparsity,
            True,
        ),
    ]

    # one colour per cache across the chapter's figures: Llama blue and DeepSeek green as in the
    # cost-against-context figure; red is kept for the kink-sized cache (the dotted line)
    colours = (PALETTE[0], PALETTE[4], PALETTE[2], PALETTE[5], PALETTE[6])

    def draw(fig, ax):
        fig.set_size_inches(7, 4.4)
        ys = np.arange(len(bars))
        for y, (_, b, read) in zip(ys, bars, strict=True):
            ax.barh(
                y,
                b.m,
                color=colours[y],
                hatch="//" if read else None,
                alpha=0.55 if read else 1.0,
            )
            ax.annotate(
                spoken(b.to("kB/token"), most=3).replace(" per token", ""),
                (b.m, y),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=9,
            )
        ax.set_yticks(ys, [label for label, _, _ in bars], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlim(500, 1e6)
        ax.invert_yaxis()
        ax.axvline(kink.m, color=PALETTE[3], linestyle=":", linewidth=1.4)
        ax.annotate(
            f"kink-sized: {spoken(kink.to('kB/token'), most=2).replace(' per token', '')}",
            (kink.m, 1),
            xycoords=("data", "axes fraction"),
            xytext=(4, -10),
            textcoords="offset points",
            fontsize=9,
            color=PALETTE[3],
        )
        ax.set_xlabel("KV bytes read per token of context, FP8 cache (log scale)")
        ax.grid(axis="y", visible=False)

    alt = (
        "KV-cache bytes read per token at FP8 for five ways of building a cache, on a log scale, "
        f"against the {spoken(kink.to('kB/token'), most=2)} a price kink implies: "
        + "; ".join(
            f"{label.replace(chr(10), ': ')}, {spoken(b.to('kB/token'), most=3)}"
            for label, b, _ in bars
        )
        + "."
    )
    caption = (
        "Where a token's KV bytes come from, at an FP8 cache: layers that keep the whole "
        "context × KV heads × a key and a value × values per head (or, for MLA, one latent per "
        "layer). Windows leave gpt-oss only its global layers to cache; MLA compresses the "
        "heads; one global layer with windows elsewhere reads the couple of kilobytes the kink "
        "implies. Sharing one layer's cache across all layers is not drawn: it cuts the bytes "
        "held, not the bytes read, since every layer re-reads it. The hatched sparse-attention "
        "bar (bytes read, not held) is no evidence: its sparsity is chosen so that it lands on "
        "the kink, to show how sparse a read would have to be."
    )
    return _render("kv_routes", draw, alt, caption)


# -- chapter B -------------------------------------------------------------------------------


def alltoall_vs_racks(presets: Presets) -> Figure:
    """The all-to-all over the layer's compute against racks spanned, in two panels (the
    weights' FLOPs alone, short context; and with attention at the default context), on a log
    axis with the line at one (below it the all-to-all hides): four dispatch x penalty lines
    per panel, each labelled at its end."""
    import matplotlib.ticker

    from book.chapters import moe

    data = moe.alltoall_series(presets)
    racks = data["racks"]
    layer = data["layer_compute"].to("ms").m
    ctx_layer = data["layer_compute_ctx"].to("ms").m
    penalty_hw = spoken(data["penalty_hw"])
    penalty_two = spoken(data["penalty_two"])
    model = presets.get("model", moe.MODEL).name
    two_chip = chip_name(presets.get("hardware", moe.TWO_RACKS)).removesuffix(" NVL72")
    hw_chip = chip_name(presets.get("hardware", moe.RACK)).removesuffix(" NVL72")
    context = context_tokens(presets.parameter["context_length"].value)
    series = (
        ("two", PALETTE[0], "o", "-", f"copy per expert, {two_chip} {penalty_two}×"),
        ("hardware", PALETTE[1], "s", "-", f"copy per expert, {hw_chip} {penalty_hw}×"),
        ("once_two", PALETTE[0], "o", "--", f"once per rack, {two_chip} {penalty_two}×"),
        ("once_hardware", PALETTE[1], "s", "--", f"once per rack, {hw_chip} {penalty_hw}×"),
    )
    panels = ((layer, "short context (weights' FLOPs)"), (ctx_layer, f"context {context}"))
    values = [t / base for base, _ in panels for key, *_ in series for t in data[key]]
    low, high = min(values) / 1.6, max(values) * 1.6

    def draw(fig, ax):
        fig.set_size_inches(9, 4.8)
        fig.delaxes(ax)  # two panels sharing the ratio axis
        axes = fig.subplots(1, 2, sharey=True)
        for axis, (base, title) in zip(axes, panels, strict=True):
            ends = []
            for key, colour, marker, style, label in series:
                ys = [t / base for t in data[key]]
                axis.plot(
                    racks,
                    ys,
                    linestyle=style,
                    marker=marker,
                    markersize=5,
                    color=colour,
                    linewidth=1.8,
                )
                ends.append([ys[-1], label, colour])
            # labels at the lines' right ends; where two ends meet, both move apart by the same
            # factor (a line of text on this log axis), and a thin leader ties each to its line
            ends.sort()
            at = _spread_on_log([y for y, *_ in ends], gap=1.3)
            for (y, label, colour), y_text in zip(ends, at, strict=True):
                axis.annotate(
                    label,
                    (racks[-1], y),
                    xytext=(racks[-1] + 0.35, y_text),
                    textcoords="data",
                    va="center",
                    fontsize=10,
                    color=colour,
                    arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.8},
                )
            axis.hlines(1, racks[0] - 0.2, racks[-1] + 0.1, color=FOREGROUND, linewidth=2.2)
            axis.annotate(
                "hides below 1",
                (racks[-1], 1),
                xytext=(6, 0),
                textcoords="offset points",
                va="center",
                fontsize=10,
                fontweight="bold",
            )
            axis.set_yscale("log")
            axis.set_ylim(low, high)
            axis.set_xticks(racks)
            axis.set_xlim(racks[0] - 0.2, racks[-1] + 3.4)
            axis.set_xlabel("racks one expert layer spans")
            axis.set_title(title, fontsize=11)
        first = axes[0]
        first.yaxis.set_major_formatter(
            matplotlib.ticker.FuncFormatter(lambda y, _: spoken_number(y, 2))
        )
        first.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        first.yaxis.set_major_locator(matplotlib.ticker.FixedLocator([0.1, 0.3, 1, 3, 10, 30]))
        first.set_ylabel("all-to-all time / layer compute time")

    def ratio(key, r, base):
        return data[key][racks.index(r)] / base

    def say(x):
        return spoken_number(x, 2)

    alt = (
        f"Two panels of the all-to-all time over the compute time of one MoE layer of {model} "
        f"at a batch of {spoken(data['batch'])}, against racks spanned, on a log axis. Short "
        f"context: {say(ratio('two', 1, layer))} in one rack, below one; over two racks "
        f"{say(ratio('two', 2, layer))} with a copy per expert on {two_chip} chips "
        f"({penalty_two}×), above it. At a context of {context}: "
        f"{say(ratio('two', 1, ctx_layer))} and {say(ratio('two', 2, ctx_layer))}."
    )
    prose = {
        "two": f"a copy per expert on {two_chip} ({penalty_two}×)",
        "hardware": f"a copy per expert on {hw_chip} ({penalty_hw}×)",
        "once_two": f"once per rack on {two_chip} ({penalty_two}×)",
        "once_hardware": f"once per rack on {hw_chip} ({penalty_hw}×)",
    }

    def at_two(base):
        """What hides over two racks, as a clause: "only X hides" or "X and Y hide"."""
        hide = [prose[k] for k, *_ in series if ratio(k, 2, base) < 1]
        if not hide:
            return "nothing hides"
        return f"only {hide[0]} hides" if len(hide) == 1 else f"{_and(hide)} hide"

    caption = (
        f"The all-to-all's bytes, over the links at peak, of one MoE layer of {model} over the "
        "layer's compute (without the two collectives' fixed latency, which the chapter's "
        "sensitivity table adds), at the crossover "
        f"batch on {spoken_number(data['chips'].to('chip').m)} NVL72 chips split across 1 to "
        f"{racks[-1]} racks (log "
        "axis; below the line at one the all-to-all hides). Solid lines send a copy per expert, "
        "as the lecture counts; dashed lines send once per rack. Left, short context: one rack's "
        f"bytes hide ({say(ratio('two', 1, layer))}); over two racks, {at_two(layer)}. Right, a "
        f"context of {context}: attention makes the layer compute "
        f"{spoken_number(ctx_layer / layer, 2)} times longer and every line drops by that "
        f"factor; over two racks, {at_two(ctx_layer)}."
    )
    return _render("alltoall_vs_racks", draw, alt, caption)


def alltoall_vs_batch(presets: Presets) -> Figure:
    """The all-to-all over the layer's time against the batch (log-log, short context): one
    rack, and two racks with a copy per expert at the lecture's penalty and at GB200's own.
    Below the crossover the layer waits on its weight read, which does not shrink with the
    batch, so the ratio falls with it; above, both grow with the batch and the ratio is flat."""
    import matplotlib.ticker

    from book.chapters import moe

    data = moe.batch_series(presets)
    batches, crossover = data["batches"], data["crossover"]
    below = data["below"]
    penalty_hw = spoken(data["penalty_hw"])
    penalty_two = spoken(data["penalty_two"])
    model = presets.get("model", moe.MODEL).name
    two_chip = chip_name(presets.get("hardware", moe.TWO_RACKS)).removesuffix(" NVL72")
    hw_chip = chip_name(presets.get("hardware", moe.RACK)).removesuffix(" NVL72")
    series = (
        ("one", PALETTE[2], "-", "one rack"),
        ("one_latency", PALETTE[2], ":", "one rack, with latency"),
        ("two", PALETTE[0], "-", f"two racks, copy per expert, {two_chip} {penalty_two}×"),
        ("hardware", PALETTE[1], "-", f"two racks, copy per expert, {hw_chip} {penalty_hw}×"),
        ("once_two", PALETTE[0], "--", f"two racks, once per rack, {two_chip} {penalty_two}×"),
        ("once_hardware", PALETTE[1], "--", f"two racks, once per rack, {hw_chip} {penalty_hw}×"),
    )

    def draw(fig, ax):
        fig.set_size_inches(9, 4.6)
        ends = []
        for key, colour, style, label in series:
            ax.plot(batches, data[key], linestyle=style, color=colour, linewidth=1.8)
            ends.append([data[key][-1], label, colour])
        # labels at the lines' right ends; where two ends meet, both move apart by the same
        # factor (a line of text on this log axis), and a thin leader ties each to its line
        ends.sort()
        at = _spread_on_log([y for y, *_ in ends], gap=1.65)  # 10-point text and some air
        for (y, label, colour), y_text in zip(ends, at, strict=True):
            ax.annotate(
                label,
                (batches[-1], y),
                xytext=(batches[-1] * 1.25, y_text),
                textcoords="data",
                va="center",
                fontsize=10,
                color=colour,
                annotation_clip=False,
                arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.8},
            )
        # the threshold holds only from the crossover up: below it a ratio under one does not
        # mean the links hide (the caption's point; reader mv23, fault 6), and the label says
        # so; it sits in the empty corner under every line right of the crossover, with an
        # arrow up to the line (reader-moe32: it sat on the dashed line)
        ax.hlines(1, crossover, batches[-1], color=FOREGROUND, linewidth=2.2)
        lowest = min(data[key][-1] for key, *_ in series)
        x_mid = (crossover * batches[-1]) ** 0.5
        ax.annotate(
            "hides below 1,\nright of the\ncrossover",
            (x_mid, 1),
            xytext=(x_mid, lowest / 3),
            textcoords="data",
            ha="center",
            va="center",
            fontsize=10,
            fontweight="bold",
            arrowprops={"arrowstyle": "->", "color": FOREGROUND, "linewidth": 1.0},
        )
        ax.axvline(crossover, color=FOREGROUND, linestyle=":", linewidth=1.4)
        ax.annotate(
            f"crossover, {spoken(Q_(crossover, 'sequence'))}",
            (crossover, min(data["one"])),
            xytext=(4, 0),
            textcoords="offset points",
            fontsize=10,
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(batches[0], batches[-1])
        fig.subplots_adjust(left=0.08, right=0.64)  # the labels sit right of the axes
        top = max(max(data[key]) for key, *_ in series)
        ax.set_ylim(top=max(10 * 1.15, top * 1.4))  # the tick at 10 shows above the top line
        ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator([0.03, 0.1, 0.3, 1, 3, 10]))
        ax.yaxis.set_major_formatter(
            matplotlib.ticker.FuncFormatter(lambda y, _: spoken_number(y, 2))
        )
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("batch (sequences, one token each)")
        ax.set_ylabel("all-to-all time / layer time")

    alt = (
        f"The all-to-all time over the layer's time for one MoE layer of {model}, against the "
        f"batch on log axes, at short context: one rack, and two racks of {two_chip} chips "
        f"({penalty_two}×) and of {hw_chip} chips ({penalty_hw}×), each with a copy per expert "
        "and sent once per rack. Each line rises with the "
        "batch up to the crossover, "
        f"{spoken(Q_(crossover, 'sequence'))}, and is flat beyond it. Below the crossover a "
        "ratio under one does not mean the links hide: at "
        f"{below['batch']} two racks with a copy per expert still make the layer "
        f"{below['slower']} and {below['slower_hw']} times slower than one. A dotted line adds "
        "one rack's two collectives' fixed latency: it falls with the batch above the crossover "
        f"and comes under one only at about {data['latency_hides']}."
    )
    caption = (
        f"One MoE layer's all-to-all over the layer's time against the batch, short context, "
        f"{spoken(presets.parameter['expert_parallel_chips'].value)}: solid lines send a copy "
        "per expert, dashed once per rack, dotted adds the stand-in latency. Above the "
        "crossover the ratio is flat, and below 1 the links hide. Left of it the layer waits "
        "on its weight read, so a ratio under 1 there is not enough (the list above)."
    )
    return _render("alltoall_vs_batch", draw, alt, caption)


def _and(items: list[str]) -> str:
    """A list as prose: 'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def alltoall_diagram(presets: Presets) -> Figure:
    """Schematic: one token dispatched to each of its k routed experts inside one rack; over
    two racks with a copy per expert, where the off-rack share of them crosses the network; and
    over two racks sent once per rack, one copy crossing to the peer chip, which fans it out."""
    from matplotlib.patches import FancyArrowPatch, Rectangle

    from book.chapters import moe

    hw = presets.get("hardware", moe.TWO_RACKS)  # the two-rack examples' chip
    k = int(presets.get("model", moe.MODEL).experts_active)
    up = spoken(hw.scale_up_bandwidth_per_direction)
    out = spoken(hw.scale_out_bandwidth_per_direction.to("GB/s"))
    lecture = Evaluator(presets)
    share = lecture.text("offrack_fraction")
    off = round(k * lecture.q("offrack_fraction").to("").m)  # arrows that leave the rack
    penalty = spoken(Evaluator(presets, moe.TWO_RACKS).q("hardware_scale_out_penalty"))
    up_colour, out_colour = PALETTE[0], PALETTE[1]
    rows, columns = 3, 4  # one rack's chips drawn; each two-rack panel draws half the columns
    if k > rows * columns - 1 or max(off, k - off) > rows * columns // 2 - 1:
        raise ValueError(f"the diagram has too few chips for {k} experts")

    def chip(ax, x, y, home=False):
        ax.add_patch(
            Rectangle(
                (x - 0.3, y - 0.25),
                0.6,
                0.5,
                facecolor=PALETTE[2] if home else "none",
                edgecolor=FOREGROUND,
                alpha=0.9 if home else 1,
                linewidth=1,
            )
        )
        return (x, y)

    def arrow(ax, a, b, colour, dashed=False):
        ax.add_patch(
            FancyArrowPatch(
                a,
                b,
                arrowstyle="-|>",
                mutation_scale=9,
                color=colour,
                linewidth=1.3,
                linestyle="--" if dashed else "-",
                connectionstyle="arc3,rad=0.2",
                shrinkA=8,
                shrinkB=8,
            )
        )

    def rack(ax, x0, x1, label):
        ax.add_patch(
            Rectangle(
                (x0, 0.7), x1 - x0, 4.3, facecolor="none", edgecolor=FOREGROUND, linewidth=1.6
            )
        )
        ax.text((x0 + x1) / 2, 4.72, label, ha="center", va="center", fontsize=9)

    def grid(ax, x0, cols, home=False):
        """A rack's chips, row by row; the first is the token's home chip when ``home``."""
        return [
            chip(ax, x0 + 1.4 * i, 3.95 - 1.2 * j, home=home and (i, j) == (0, 0))
            for j in range(rows)
            for i in range(cols)
        ]

    def spread(chips, n, skip_home):
        """n target chips spread over a rack (every other chip first), never the home chip."""
        order = [c for i, c in enumerate(chips) if i % 2 == 1] + [
            c for i, c in enumerate(chips) if i % 2 == 0
        ]
        return [c for c in order if not (skip_home and c == chips[0])][:n]

    def draw(fig, ax):
        fig.set_size_inches(10.5, 4.2)
        ax.set_xlim(0, 21.9)
        ax.set_ylim(0, 6)
        ax.axis("off")
        # left: one rack, every byte on the scale-up network
        rack(ax, 0.3, 6.3, "one rack")
        one = grid(ax, 1.1, columns, home=True)
        for target in spread(one, k, skip_home=True):
            arrow(ax, one[0], target, up_colour)
        ax.text(3.3, 0.25, f"all traffic on NVLink, {up} per direction", ha="center", fontsize=9)
        # right: two racks, the off-rack share of the experts in the other rack
        rack(ax, 7.0, 10.0, "rack 1")
        rack(ax, 11.0, 14.0, "rack 2")
        left = grid(ax, 7.8, columns // 2, home=True)
        right = grid(ax, 11.8, columns // 2)
        for target in spread(left, k - off, skip_home=True):
            arrow(ax, left[0], target, up_colour)
        for target in spread(right, off, skip_home=False):
            arrow(ax, left[0], target, out_colour, dashed=True)
        ax.text(
            10.5,
            0.25,
            f"a copy per expert: {off} of {k} leave, {out} each way",
            ha="center",
            fontsize=9,
        )
        # far right: the same two racks, one copy to the peer chip, fanned out over NVLink there
        rack(ax, 14.7, 17.7, "rack 1")
        rack(ax, 18.7, 21.7, "rack 2")
        home = grid(ax, 15.5, columns // 2, home=True)
        peer = grid(ax, 19.5, columns // 2)
        for target in spread(home, k - off, skip_home=True):
            arrow(ax, home[0], target, up_colour)
        arrow(ax, home[0], peer[0], out_colour, dashed=True)
        for target in spread(peer, off, skip_home=True):
            arrow(ax, peer[0], target, up_colour)
        ax.text(18.2, 0.25, "once per rack: one copy leaves", ha="center", fontsize=9)
        ax.plot([], [], color=up_colour, label="scale-up (NVLink)")
        ax.plot([], [], color=out_colour, linestyle="--", label="scale-out (network)")
        ax.plot(
            [], [], marker="s", linestyle="none", color=PALETTE[2], label="the token's home chip"
        )
        ax.legend(loc="upper center", ncol=3, fontsize=9, bbox_to_anchor=(0.5, 1.04))

    alt = (
        "Diagram: on the left one rack of chips, where a token's home chip sends its activation "
        f"to the {k} chips holding its experts over NVLink at {up} per direction; on the right "
        f"the same layer over two racks, where {off} of the {k} arrows cross to the other rack "
        f"over the network at {out} per direction; at the far right the same two racks when "
        f"the token is sent once per rack: one arrow crosses to the chip in the same position "
        f"in the other rack, which forwards it over NVLink to the {off} experts there."
    )
    caption = (
        f"Dispatch of one token to its {k} routed experts, one arrow each, drawn as if each "
        "lives on a different chip (combine sends the results back the same way). Inside one "
        f"rack every arrow is an NVLink path; over two racks a share {share} of them, {off} "
        f"of {k}, crosses the scale-out network, {penalty} times slower per chip and per "
        f"direction on {chip_name(hw)} chips. Sent once per rack (right, DeepSeek-V3's "
        "dispatch), one "
        "copy crosses and the other rack's NVLink fans it out."
    )
    return _render("alltoall_diagram", draw, alt, caption)


# -- chapter G -------------------------------------------------------------------------------


def _feistel_panel(ax, x0, title, top, bottom, sign):
    """One Feistel round drawn at horizontal offset ``x0``: the kept half on the left, the
    changed half on the right, f between them."""
    from matplotlib.patches import Circle, FancyArrowPatch, Rectangle

    left, right = x0, x0 + 2.0
    arrow = dict(arrowstyle="-|>", mutation_scale=12, color=FOREGROUND, linewidth=1.4)
    ax.text(x0 + 1.0, 5.6, title, ha="center", va="bottom", fontsize=11, fontweight="bold")
    for xpos, label in zip((left, right), top, strict=True):
        ax.text(xpos, 5.0, label, ha="center", va="bottom", fontsize=11)
    for xpos, label in zip((left, right), bottom, strict=True):
        ax.text(xpos, 0.7, label, ha="center", va="top", fontsize=11)
    ax.add_patch(FancyArrowPatch((left, 4.9), (left, 0.8), **arrow))  # the kept half
    ax.add_patch(FancyArrowPatch((right, 4.9), (right, 3.0), **arrow))
    ax.add_patch(FancyArrowPatch((right, 2.6), (right, 0.8), **arrow))
    box = Rectangle((x0 + 0.65, 2.5), 0.7, 0.6, fill=False, edgecolor=FOREGROUND, linewidth=1.4)
    ax.add_patch(box)
    ax.text(x0 + 1.0, 2.8, "f", ha="center", va="center", fontsize=12, style="italic")
    ax.add_patch(FancyArrowPatch((left, 2.8), (x0 + 0.65, 2.8), **arrow))
    ax.add_patch(FancyArrowPatch((x0 + 1.35, 2.8), (right - 0.2, 2.8), **arrow))
    ax.add_patch(Circle((right, 2.8), 0.2, fill=False, edgecolor=FOREGROUND, linewidth=1.4))
    ax.text(right, 2.8, sign, ha="center", va="center", fontsize=12)


def feistel_round(presets: Presets) -> Figure:
    """The Feistel round forward and its inverse: the inverse evaluates f again, never f⁻¹."""
    from book.chapters import reversible as chapter

    def draw(fig, ax):
        fig.set_size_inches(7, 3.6)
        _feistel_panel(ax, 0.0, "forward", ("x", "y"), ("x", "z = y + f(x)"), "+")
        _feistel_panel(ax, 4.0, "inverse", ("x", "z"), ("x", "y = z \u2212 f(x)"), "\u2212")
        ax.set_xlim(-0.8, 6.9)
        ax.set_ylim(0, 6.3)
        ax.set_aspect("equal")
        ax.axis("off")

    alt = (
        "Two diagrams side by side. Forward: x passes straight down unchanged; f of x is added "
        "to y, giving z = y + f(x). Inverse: x again passes down unchanged; the same f of x is "
        "subtracted from z, giving back y = z minus f(x)."
    )
    model = presets.get("model", chapter.MODEL)
    caption = (
        "A Feistel round and its inverse. Both run f forwards on the half that was kept; "
        "neither ever needs f's inverse, so f can be any function at all. A reversible "
        f"{model.name} would stack {model.layers} layers: {model.layers} such rounds in the "
        f"lecture's form, one per layer, or {model.layers} two-round blocks in the Reformer's; "
        "the backward pass would walk them in inverse order."
    )
    return _render("feistel_round", draw, alt, caption)


def _two_stream_panel(ax, x0, title, top, bottom, steps, equations):
    """One reversible block drawn at horizontal offset ``x0``: two streams running down, and
    ``steps`` of (height, stream read, function, sign, label after), each adding (or
    subtracting) a function of one stream to the other."""
    from matplotlib.patches import Circle, FancyArrowPatch, Rectangle

    cols = (x0, x0 + 2.4)
    arrow = dict(arrowstyle="-|>", mutation_scale=12, color=FOREGROUND, linewidth=1.4)
    ax.text(x0 + 1.2, 5.6, title, ha="center", va="bottom", fontsize=11, fontweight="bold")
    for xpos, label in zip(cols, top, strict=True):
        ax.text(xpos, 5.0, label, ha="center", va="bottom", fontsize=11)
    for xpos, label in zip(cols, bottom, strict=True):
        ax.text(xpos, 0.7, label, ha="center", va="top", fontsize=11)
    ax.text(x0 + 1.2, -0.1, equations, ha="center", va="top", fontsize=10)
    for col, xpos in enumerate(cols):
        joins = sorted((h for h, read, *_ in steps if read != col), reverse=True)
        ends = [4.9, *[j for h in joins for j in (h + 0.2, h - 0.2)], 0.8]
        for start, stop in zip(ends[::2], ends[1::2], strict=True):
            ax.add_patch(FancyArrowPatch((xpos, start), (xpos, stop), **arrow))
    for height, read, name, sign, after in steps:
        src, dst = cols[read], cols[1 - read]
        side = 1 if dst > src else -1
        box = Rectangle(
            (x0 + 0.85, height - 0.3), 0.7, 0.6, fill=False, edgecolor=FOREGROUND, linewidth=1.4
        )
        ax.add_patch(box)
        ax.text(x0 + 1.2, height, name, ha="center", va="center", fontsize=12, style="italic")
        ax.add_patch(FancyArrowPatch((src, height), (x0 + 1.2 - side * 0.35, height), **arrow))
        ax.add_patch(
            FancyArrowPatch((x0 + 1.2 + side * 0.35, height), (dst - side * 0.2, height), **arrow)
        )
        ax.add_patch(Circle((dst, height), 0.2, fill=False, edgecolor=FOREGROUND, linewidth=1.4))
        ax.text(dst, height, sign, ha="center", va="center", fontsize=12)
        ax.text(
            dst + side * 0.15,
            height - 0.55,
            after,
            ha="left" if side > 0 else "right",
            va="center",
            fontsize=10,
        )


def reversible_block(presets: Presets) -> Figure:
    """The two-stream reversible block forward and backward, in Gomez et al.'s names: two of the
    text's rounds, y1 = x1 + F(x2) and then y2 = x2 + G(y1), each stream drawn in place rather
    than swapped. The backward pass rebuilds the input from the output by evaluating G and F
    again, never their inverses."""
    from book.chapters import reversible as chapter

    minus = "\u2212"
    x1, x2, y1, y2 = "x\u2081", "x\u2082", "y\u2081", "y\u2082"

    def draw(fig, ax):
        fig.set_size_inches(7, 4.2)
        _two_stream_panel(
            ax,
            0.0,
            "forward",
            (x1, x2),
            (y1, y2),
            ((3.8, 1, "F", "+", y1), (2.2, 0, "G", "+", y2)),
            f"{y1} = {x1} + F({x2}),  {y2} = {x2} + G({y1})",
        )
        _two_stream_panel(
            ax,
            5.0,
            "backward: rebuild the input",
            (y1, y2),
            (x1, x2),
            ((3.8, 0, "G", minus, x2), (2.2, 1, "F", minus, x1)),
            f"{x2} = {y2} {minus} G({y1}),  {x1} = {y1} {minus} F({x2})",
        )
        ax.set_xlim(-1.4, 8.6)
        ax.set_ylim(-0.7, 6.3)
        ax.set_aspect("equal")
        ax.axis("off")

    alt = (
        "Two diagrams side by side, each with two streams, x1 on the left and x2 on the right, "
        "running down. Forward: F of x2 is added to x1, giving y1; then G of y1 is added to x2, "
        "giving y2. Backward: from the outputs y1 and y2, G of y1 is subtracted from y2, giving "
        "back x2; then F of x2 is subtracted from y1, giving back x1."
    )
    model = presets.get("model", chapter.MODEL)
    caption = (
        "A reversible block as Gomez et al. and the Reformer write it: two of the text's rounds "
        "in a row, first F (attention) of one stream added to the other, then G (the MLP) of "
        "the result added back; each stream stays in its column instead of being swapped. "
        "Backward, the rounds are undone in reverse order, each by evaluating its function "
        "again and subtracting; neither F nor G is ever inverted. A "
        f"reversible {model.name} would stack {model.layers} such blocks (one per layer, two "
        "rounds each), keep only the last "
        "block's output, and rebuild every earlier block's input on the way back."
    )
    return _render("reversible_block", draw, alt, caption)


def activation_vs_layers(presets: Presets) -> Figure:
    """Activation memory of one training sequence against depth, in two panels on shared log
    axes. Top, the lecture's count in layer inputs alone: every input kept, square-root
    checkpoints and the reversible network's last output, whose slopes are exactly 1, 1/2 and 0.
    Bottom, every activation a backward pass needs counted: all of them stored (no recompute), and
    three strategies at the same one extra forward pass (each layer's input kept and the layer
    re-run, square-root checkpointing whose recomputed segment keeps its internals, and a
    reversible network), where the one layer's internals every recomputing scheme holds is a
    floor that hides the slopes at shallow depth."""
    from book.chapters import reversible as chapter
    from derivations import get

    depth = np.arange(chapter.LAYER_SWEEP[0], chapter.LAYER_SWEEP[1] + 1)
    kw = dict(presets=presets, model=chapter.MODEL, batch_size=chapter.TRAIN_BATCH)
    cases = chapter.memory_cases(presets)
    buffer = cases["buffer"].to("GB").m  # one layer's internals, whatever the depth
    # every activation at Llama's own count per residual-stream value (the chapter's factor)
    stored = (
        get("full_activation_memory")
        .sweep("n_layers", depth, activation_bytes_factor=cases["factor"], **kw)
        .to("GB")
    )
    inputs = get("activation_memory").sweep("n_layers", depth, **kw).to("GB").m
    layer_input = cases["rev"].to("GB").m  # one checkpoint: one layer's input
    ckpt_inputs = get("checkpoint_activation_memory").sweep("n_layers", depth, **kw).to("GB").m

    def checkpointed(n: int, every: float) -> float:
        return chapter.checkpointed_memory(n, every, layer_input)

    lecture = {
        "every layer's input: slope 1": inputs,
        "square-root checkpoints: slope \u00bd": ckpt_inputs,
        "reversible, last output, one stream: flat": np.full(depth.shape, layer_input),
    }
    curves = {
        "every activation stored (no recompute)": stored.m,
        "each layer's input kept, layer re-run": chapter.held_rerunning(
            inputs, buffer, layer_input
        ),
        "checkpointed, segment keeps internals": np.array(
            [checkpointed(int(n), q) for n, q in zip(depth, stored.m.tolist(), strict=True)]
        ),
        "reversible: both last outputs, one layer's internals": np.full(
            depth.shape, cases["rev_two"].to("GB").m + buffer
        ),
    }
    # up to this depth a segment per layer is already the best whole checkpointing, so it
    # coincides with re-running each layer: two-layer segments hold one more layer's internals
    # and save half the inputs, which pays only once half the layers outweigh one layer's
    # internals (n / 2 > internals over one input)
    rerun_line, ckpt_line = list(curves.values())[1:3]
    apart = ~np.isclose(ckpt_line, rerun_line, rtol=1e-9)
    crossover = int(depth[np.argmax(apart)])  # the first depth where checkpointing is lower
    assert apart[crossover - depth[0] :].all() and not apart[: crossover - depth[0]].any()
    assert (ckpt_line[apart] < rerun_line[apart]).all()
    model = presets.get("model", chapter.MODEL)
    context = presets.parameter["context_length"].value
    hbm = presets.get("hardware", chapter.HARDWARE).hbm_capacity.to("GB")
    chip = presets.get("hardware", chapter.HARDWARE).name

    from matplotlib.ticker import FuncFormatter, NullFormatter

    def draw(fig, ax):
        fig.set_size_inches(7, 10.4)
        fig.delaxes(ax)
        left, right = fig.subplots(2, 1, sharey=True)
        for a, group, title in (
            (left, lecture, "the lecture's count: layer inputs, reversible as one stream"),
            (right, curves, "everything held at the peak, reversible as two streams"),
        ):
            colors = PALETTE[1 : 1 + len(group)] if a is left else PALETTE[: len(group)]
            for color, (label, y) in zip(colors, group.items(), strict=True):
                # checkpointing is dashed: up to the crossover it runs on the re-run line
                style = "--" if label.startswith("checkpointed") else "-"
                a.loglog(depth, y, label=label, linewidth=2, color=color, linestyle=style)
            a.axvline(model.layers, color=FOREGROUND, linestyle=":", linewidth=1)
            a.set_title(title, fontsize=13)
            a.tick_params(labelsize=11)
            a.set_xlabel("layers", fontsize=12)
            a.set_xlim(depth[0], depth[-1])
            ticks = [t for t in (4, 10, 20, 40, 80, 200, 400, 1000) if depth[0] <= t <= depth[-1]]
            a.set_xticks(ticks)
            a.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            a.xaxis.set_minor_formatter(NullFormatter())
            a.set_ylabel("activation memory (GB)", fontsize=12)
            a.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, fontsize=11)
        left.annotate(
            f"{model.name}:\n{model.layers} layers",
            (model.layers, 1),
            xycoords=("data", "axes fraction"),
            xytext=(4, -30),
            textcoords="offset points",
            fontsize=11,
        )
        _mark(right, hbm.m, f"{chip} HBM {spoken(hbm)}", vertical=False, fontsize=11)
        # the headline at the model's depth: the three schemes at one extra forward pass, and
        # the gap between the best checkpointing and the reversible network
        i = list(depth).index(model.layers)
        rerun, ckpt, rev = (y[i] for y in list(curves.values())[1:])
        for y, color, offset in zip(
            # off the lines: re-run above its rising line, checkpointing below both rising
            # lines, the reversible network below its flat one
            (rerun, ckpt, rev),
            PALETTE[1:4],
            ((-10, 12), (-10, -21), (-8, -15)),
            strict=True,
        ):
            right.plot([model.layers], [y], "o", color=color, markersize=5)
            right.annotate(
                quantity(Q_(y, "GB"), 3),  # the caption's figures (13.3 / 10.7 / 2.99)
                (model.layers, y),
                xytext=offset,
                textcoords="offset points",
                ha="right",
                fontsize=11,
                color=color,
            )
        gap = model.layers * 1.35
        right.annotate(
            "",
            xy=(gap, rev),
            xytext=(gap, ckpt),
            arrowprops=dict(arrowstyle="<->", color=FOREGROUND, linewidth=1),
        )
        right.annotate(
            f"\u2248{spoken_number(ckpt / rev, most=2)}\u00d7 less\nat equal compute",
            (gap, (ckpt * rev) ** 0.5),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=11,
        )
        left.set_yticks([t for t in (0.1, 1, 10, 100, 1000)])
        left.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        left.yaxis.set_minor_formatter(NullFormatter())

    def at(y) -> str:  # three figures, as the chapter prints the layer inputs (10.7 GB)
        q = Q_(y[list(depth).index(model.layers)], "GB")
        return quantity(q if q >= Q_(1, "GB") else q.to("MB"), 3)

    # three figures, as the chapter's table prints them: the arrow's ratio comes from these
    held = [quantity(Q_(y[list(depth).index(model.layers)], "GB"), 3) for y in curves.values()]
    counted = [at(y) for y in lecture.values()]
    # every layer's input to four figures, apart from best checkpointing's 10.7 GB below
    inputs_precise = quantity(Q_(inputs[list(depth).index(model.layers)], "GB"), 4)
    alt = (
        f"Two panels, one above the other, of activation memory for one training sequence of "
        f"{context_tokens(context)} "
        f"with {model.name}'s width against depth, both axes logarithmic. Top, layer inputs "
        f"only: every input kept rises with slope 1, square-root checkpoints with slope one half, "
        f"the reversible network's last output is flat; at {model.layers} layers "
        f"{', '.join(counted)}. Bottom, every activation the backward pass needs: storing "
        f"everything and keeping each layer's input rise with depth, checkpointing more slowly, "
        f"the reversible network stays flat, all three recomputing schemes sitting on a floor of "
        f"one layer's internals; at {model.layers} layers {', '.join(held)}, against one "
        f"{chip}'s {spoken(hbm)} of HBM."
    )
    caption = (
        f"Activation memory of one sequence of {context_tokens(context)} against depth at "
        f"{model.name}'s width; the dotted line marks its {model.layers} layers. Top, the "
        f"lecture's count in layer inputs, one stream for the reversible network: slopes linear, "
        f"square root and flat ({inputs_precise}, {', '.join(counted[1:])} at {model.layers} "
        f"layers). Bottom, what each scheme holds at its peak, two streams for the reversible "
        f"network: the three that recompute at one extra forward pass ({held[1]}, {held[2]} and "
        f"{held[3]}) sit on one layer's internals ({quantity(Q_(buffer, 'GB'), 4)}), and "
        f"checkpointing (dashed) runs on the re-run line up to {spoken_number(crossover - 1)} "
        f"layers, paying only from {spoken_number(crossover)}."
    )
    return _render("activation_vs_layers", draw, alt, caption)


# -- validation ------------------------------------------------------------------------------

SCENARIO_LABELS = {
    "offline": "offline",
    "server": "server",
    "interactive": "interactive",
    "latency_sweep": "latency sweep",
    "decode_only": "decode only",
    "single_stream": "batch 1 (per user)",
    "training": "training",
}


def measured_vs_bound(presets: Presets) -> Figure:
    """Each row's measurement as a share of its bound, by scenario, on a log axis, with each
    scenario's median marked and labelled: the band the chapter quotes, read off the picture."""
    from book.validation import MIN_ROWS, band_group, derived, enough, summary, validate

    # a rate derived from a stated MFU sits on its MFU by construction: it is no measurement
    every = validate(presets)
    rows = [r for r in every if r.efficiency is not None and not derived(r)]
    stated = sum(derived(r) for r in every)
    bands = summary(rows)
    above = [r for r in rows if r.efficiency > 1]

    # a row's column: its scenario, training split by the format of the peak it is held against
    # (a narrower format has a higher peak, an FP8 one twice BF16's: never pooled)
    column = band_group

    labels = {
        **{k: v for k, v in SCENARIO_LABELS.items() if k != "training"},
        **{f"training_{f}": f"training ({f.upper()} peak)" for f in ("bf16", "fp8", "fp4")},
    }
    present = [(s, t) for s, t in labels.items() if any(column(r) == s for r in rows)]
    low = min(r.efficiency for r in rows) * 100 / 2

    def draw(fig, ax):
        from matplotlib.ticker import FuncFormatter  # only when drawn: a warm build never is

        markers = "osD^v<>"
        jitter = np.random.default_rng(0)  # the same picture every build
        for i, (scenario, _) in enumerate(present):
            effs = 100 * np.array([r.efficiency for r in rows if column(r) == scenario])
            ax.scatter(
                i + jitter.uniform(-0.18, 0.18, len(effs)),
                effs,
                marker=markers[i % len(markers)],
                s=22,
                zorder=3,
            )
            if not enough(len(effs)):  # a median of a few rows is one of them: none drawn
                continue
            median = float(np.median(effs))
            ax.plot([i - 0.3, i + 0.3], [median, median], color=FOREGROUND, linewidth=2.2)
            ax.annotate(f"{spoken_number(median)}%", (i + 0.32, median), fontsize=8, va="center")
        ax.axhline(100, color=FOREGROUND, linewidth=1.6)
        ax.text(-0.45, 112, "the bound (100%): no row above it", fontsize=9)
        ax.set_yscale("log")
        ax.set_ylim(low, 200)
        ax.set_xlim(-0.6, len(present) - 0.1)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{number(v)}%"))
        ax.set_xticks(range(len(present)), [t for _, t in present], rotation=20, ha="right")
        ax.set_ylabel("measured as a share of the bound (log scale)")

    offline = bands.get("offline")
    alt = (
        f"Strip plot of {len(rows)} published measurements as a share of their roofline bounds, "
        f"one column per scenario on a log axis, the median marked on each column of "
        f"{MIN_ROWS} rows or more, and the bound at "
        f"100%. {len(above)} points lie above it"
        + (f" ({', '.join(r.id for r in above)})" if above else "")
        + ". "
        + (
            f"Offline serving rows sit at a median of {number(100 * offline['median'], 3)}% "
            f"of the bound."
            if offline and enough(offline["count"])
            else ""
        )
    )
    caption = (
        f"Every measurement with a bound ({len(rows)} rows) as a share of it, by scenario; the "
        f"bar and its label are the scenario's median, drawn only where a column has {MIN_ROWS} "
        f"rows or more (training: a share of peak FLOP/s at each "
        f"run's own precision, one column per format). The distance below 100% is the gap the "
        f"roofline leaves; "
        + (
            f"{len(above)} above it are flagged with their cause."
            if above
            else "none lies above it."
        )
        + (
            f" Left out: {stated} training rate{'s' if stated != 1 else ''} derived from a "
            "stated MFU, which sits on that MFU by construction."
            if stated
            else ""
        )
    )
    return _render("measured_vs_bound", draw, alt, caption)


def predicted_vs_measured(presets: Presets) -> Figure:
    """Each row's honest prediction (leave-one-out, or the whole fit for a row kept out of it)
    against its measurement, both as a share of the row's bound (so rows in tokens/s per chip
    and per user share one dimensionless axis, and the spread of scenarios does not pass for
    agreement), with the x1.25 and x1.5 bands."""
    from book.predict import forecast_panel

    panel = forecast_panel(presets)
    made, honest, cases = panel["made"], panel["honest"], panel["cases"]
    groups, share = panel["groups"], panel["share"]
    lo, hi = panel["lo"], 120
    loo = made["summary"]["leave_one_out"]

    low_ratio, high_ratio = 0.2, 5.0  # the residual panel's range: a miss beyond it is clipped
    held = next(ids for label, ids in groups.items() if label.startswith("newest"))
    held_ratios = [honest[i][0] / cases[i].measured for i in held]
    clipped = sum(not low_ratio <= honest[i][0] / cases[i].measured <= high_ratio for i in honest)
    collapsed = len(panel["collapsed"])

    def draw(fig, ax):
        from matplotlib.lines import Line2D
        from matplotlib.ticker import FuncFormatter

        fig.set_size_inches(7, 7.6)
        grid = fig.add_gridspec(2, 1, height_ratios=(2.4, 1))
        ax.set_subplotspec(grid[0])
        below = fig.add_subplot(grid[1], sharex=ax)
        line = np.array([lo, hi])
        for lim, alpha in ((1.5, 0.08), (1.25, 0.12)):
            below.fill_between(line, 1 / lim, lim, color=FOREGROUND, alpha=alpha, linewidth=0)
        below.axhline(1, color=FOREGROUND, linewidth=1.4)
        for k, ((_, ids), marker) in enumerate(zip(groups.items(), "osxd^", strict=False)):
            color = PALETTE[k % len(PALETTE)]  # the same colour as the group's upper points
            ratio = np.array([honest[i][0] / cases[i].measured for i in ids])
            x = np.array([share[i][1] for i in ids])
            inside = (ratio >= low_ratio) & (ratio <= high_ratio)
            below.scatter(x[inside], ratio[inside], marker=marker, s=18, color=color)
            for out, edge, arrow in (
                (ratio < low_ratio, low_ratio * 1.1, "v"),
                (ratio > high_ratio, high_ratio / 1.1, "^"),
            ):
                if out.any():  # a miss beyond the panel: an arrow at its edge
                    below.scatter(x[out], np.full(out.sum(), edge), marker=arrow, s=30, color=color)
        below.set_yscale("log")
        below.set_ylim(low_ratio, high_ratio)
        below.set_yticks([0.2, 0.5, 1, 2, 5], ["×0.2", "×0.5", "×1", "×2", "×5"])
        below.minorticks_off()
        below.set_ylabel("forecast ÷ measured")
        below.set_xlabel("measured throughput, % of the row's roofline bound")
        ax.fill_between(line, line / 1.5, line * 1.5, color=FOREGROUND, alpha=0.08, linewidth=0)
        ax.fill_between(line, line / 1.25, line * 1.25, color=FOREGROUND, alpha=0.12, linewidth=0)
        ax.plot(line, line, color=FOREGROUND, linewidth=1.4)
        handles = []  # the groups alone; the diagonal and the bands are in the caption
        for k, ((label, ids), marker) in enumerate(zip(groups.items(), "osxd^", strict=False)):
            if ids:
                x = np.array([share[i][1] for i in ids])
                y = np.array([share[i][0] for i in ids])
                color = PALETTE[k % len(PALETTE)]
                ax.scatter(x[y >= lo], y[y >= lo], marker=marker, s=22, color=color)
                handles.append(
                    Line2D([], [], linestyle="", marker=marker, color=color, label=label)
                )
                if (y < lo).any():  # a forecast far below the panel: an arrow at its foot
                    ax.scatter(
                        x[y < lo], np.full((y < lo).sum(), lo * 1.15), marker="v", s=30, color=color
                    )
        if collapsed:  # said beside the arrows, which keep their group's colour
            ax.text(
                lo * 1.9,
                lo * 1.45,
                f"▼ off the scale: {collapsed} forecasts collapse (in their group's colour)",
                fontsize=8,
                va="center",
                color=FOREGROUND,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        percent = FuncFormatter(lambda v, _: f"{number(v)}%")
        for axis in (ax.yaxis, below.xaxis):
            axis.set_major_formatter(percent)
        ax.tick_params(labelbottom=False)
        ax.set_ylabel("forecast throughput (made without the row),\n% of the row's roofline bound")
        ax.legend(
            handles=handles,
            loc="lower left",
            bbox_to_anchor=(0, 1.02),
            fontsize=9,
            frameon=False,
            borderaxespad=0,
        )

    alt = (
        f"Log-log scatter of {len(honest)} forecasts against measurements, each as a percentage "
        f"of its row's roofline bound, with shaded bands "
        f"for a factor of 1.25 and 1.5. The {loo['count']} rows in the fit are forecast with "
        f"each left out in turn: median miss a factor of {number(loo['median'], 3)}, "
        f"{number(100 * loo['within_1_5'], 2)}% within a factor of 1.5."
    )
    caption = (
        f"Forecast against measured throughput, both as a percentage of the row's roofline bound "
        f"(so rows in tokens/s per chip and per user share one axis); no forecast used its own "
        f"row. A point on the diagonal is a perfect forecast; the shaded bands are a miss of "
        f"×1.25 (dark) and ×1.5 (light) either way. The newest rows are drawn as the model now "
        f"forecasts them, all three changes in, not as the summary table scores them. The lower "
        f"panel is the same points as forecast over measured: the newest rows, forecast after "
        f"the revisions, run high "
        f"({sum(r > 1 for r in held_ratios)} of "
        f"{len(held)} over-predicted, a median of ×{number(float(np.median(held_ratios)), 2)}), "
        f"and {clipped} rows the forecast misses by more than ×{number(high_ratio)} are arrows at "
        f"its edge"
        + (
            f"; in the upper panel, {collapsed} forecasts collapse below its floor (half the "
            f"least measured share) and are arrows at its foot"
            if collapsed
            else ""
        )
        + ". The paragraph under the figure names the causes of the rows far from the line; the "
        "appendix works them through."
    )
    return _render("predicted_vs_measured", draw, alt, caption)


def prediction_waterfall(presets: Presets) -> Figure:
    """The worked example's prediction as a waterfall: from the bound, each fitted mechanism
    takes its share of the rate away, down to the prediction, drawn beside the measurement."""
    from book.chapters.validation import EXAMPLE, waterfall

    stages = waterfall(presets)
    row = presets.get("measurement", EXAMPLE)
    measured = float(row.throughput_per_chip.to("token/s").m)
    bound, predicted = stages[0]["rate"], stages[-1]["rate"]

    def draw(fig, ax):
        import textwrap

        fig.set_size_inches(8, 4.8)
        # tick labels at 9 pt (about 11 px at the page's width), wrapped to fit under a bar
        labels = [
            "\n".join(textwrap.fill(part, 13) for part in s.get("short", s["what"]).split("\n"))
            for s in stages
        ] + ["measured"]
        x = np.arange(len(labels))
        for i, s in enumerate(stages):
            if i == 0 or s["what"] == "predicted":
                ax.bar(i, s["rate"], color=PALETTE[0], width=0.6)
            else:  # the rate this mechanism takes away, floating below the previous stage
                before = stages[i - 1]["rate"]
                # a fitted residual is hatched grey: what the fit absorbs, not a mechanism
                residual = s.get("residual", False)
                ax.bar(
                    i,
                    before - s["rate"],
                    bottom=s["rate"],
                    color="#bbbbbb" if residual else PALETTE[3],
                    hatch="//" if residual else None,
                    width=0.6,
                )
                ax.plot([i - 1.3, i + 0.3], [before, before], color=FOREGROUND, linewidth=0.6)
            if s["what"] == "predicted":  # the forecast's own value, above its bar
                ax.annotate(
                    number(round(s["rate"])),
                    (i, s["rate"]),
                    xytext=(0, 3),
                    textcoords="offset points",
                    ha="center",
                    fontsize=9,
                )
                continue
            if i and np.isclose(s["rate"], stages[i - 1]["rate"]):
                ax.annotate(  # a mechanism with no bar: say so where the bar would be
                    "does not bind",
                    (i, s["rate"]),
                    xytext=(0, 3),
                    textcoords="offset points",
                    ha="center",
                    fontsize=8,
                    color=FOREGROUND,
                )
                continue
            ax.annotate(
                number(round(s["rate"])),
                (i, s["rate"]),
                xytext=(0, -11),
                textcoords="offset points",
                ha="center",
                fontsize=9,
            )
        ax.bar(len(stages), measured, color=PALETTE[2], width=0.6)
        ax.annotate(
            number(round(measured)),
            (len(stages), measured),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=9,
        )
        ax.axhline(measured, color=PALETTE[2], linestyle=":", linewidth=1)
        ax.set_xticks(x, labels, rotation=0, ha="center", fontsize=9)
        ax.set_ylabel("tokens/s per chip")
        ax.set_ylim(0, bound * 1.08)

    alt = (
        f"Waterfall bar chart of the worked example's prediction: the bound of "
        f"{number(round(bound))} tokens/s per chip, then each fitted mechanism's loss in turn "
        + ", ".join(f"{s['what']} to {number(round(s['rate']))}" for s in stages[1:-1])
        + f", ending at a prediction of {number(round(predicted))} tokens/s against "
        f"{number(round(measured))} measured."
    )
    caption = (
        f"Where the gap goes, for the worked example: from the bound ({number(round(bound))} "
        f"tokens/s per chip), each fitted mechanism takes away its part of the rate (the floating "
        f"bars), down to the forecast ({number(round(predicted))}), beside the measurement "
        f"({number(round(measured))}, the dotted line). The hatched grey bar is not a mechanism: "
        f"it is a fitted residual, prompts charged at a share of the decode matmuls' rate, "
        f"absorbing what the other factors do not explain."
        + (
            " A mechanism with no bar does not bind: slowed to their share, the reads stay "
            "shorter than the compute."
            if any(a["rate"] == b["rate"] for a, b in zip(stages[1:-2], stages[2:-1], strict=True))
            else ""
        )
    )
    return _render("prediction_waterfall", draw, alt, caption)


FIGURES = {
    "latency_vs_batch": latency_vs_batch,
    "cost_vs_batch": cost_vs_batch,
    "cost_vs_speed": cost_vs_speed,
    "roofline": roofline,
    "drain_ladder": drain_ladder,
    "memory_vs_stages": memory_vs_stages,
    "pipeline_schedule": pipeline_schedule,
    "pipeline_inference": pipeline_inference,
    "pipeline_bubble": pipeline_bubble,
    "chinchilla_contours": chinchilla_contours,
    "equal_cost_heuristic": equal_cost_heuristic,
    "cost_vs_context": cost_vs_context,
    "kv_routes": kv_routes,
    "kv_cache_mechanism": kv_cache_mechanism,
    "alltoall_diagram": alltoall_diagram,
    "alltoall_vs_racks": alltoall_vs_racks,
    "alltoall_vs_batch": alltoall_vs_batch,
    "feistel_round": feistel_round,
    "reversible_block": reversible_block,
    "activation_vs_layers": activation_vs_layers,
    "measured_vs_bound": measured_vs_bound,
    "predicted_vs_measured": predicted_vs_measured,
    "prediction_waterfall": prediction_waterfall,
}
CHAPTER_FIGURES = {
    "batching": ("latency_vs_batch", "cost_vs_batch", "cost_vs_speed", "roofline"),
    "moe": ("alltoall_diagram", "alltoall_vs_racks", "alltoall_vs_batch"),
    "pipeline": ("memory_vs_stages", "pipeline_inference", "pipeline_schedule", "pipeline_bubble"),
    "overtraining": ("chinchilla_contours", "equal_cost_heuristic"),
    "long_context": ("cost_vs_context", "drain_ladder", "kv_routes", "kv_cache_mechanism"),
    "reversible": ("feistel_round", "reversible_block", "activation_vs_layers"),
    "validation": ("predicted_vs_measured", "measured_vs_bound", "prediction_waterfall"),
}


_DRAWN: dict[tuple, Figure] = reads.ReadsDict()  # by the preset files behind it and figure id


def drawn(fig_id: str, presets: Presets) -> Figure:
    """The figure, drawn once per preset set (a figure used on two pages is drawn once), or
    read from the store when an earlier build drew it from the same inputs
    (:func:`remembered_figure`).
    """
    key = (presets.files, fig_id)
    if key not in _DRAWN:
        with reads.recording():
            _DRAWN[key] = remembered_figure(fig_id, presets)
    return _DRAWN[key]


def remembered_figure(fig_id: str, presets: Presets) -> Figure:
    """``FIGURES[fig_id](presets)``, or what it made before from the same inputs, kept by
    ``book.resultcache`` (sealed JSON: the SVG, alt text and caption): the figure's id, the
    library and the preset files, the source of this module and of every book module it
    imports (:func:`book.resultcache.code_closure`), and matplotlib's setup
    (:func:`drawing_setup`). A build whose inputs are unchanged neither imports nor runs
    matplotlib."""
    from book.resultcache import code_closure, remembered

    def draw() -> dict:
        fig = FIGURES[fig_id](presets)
        return {"svg": fig.svg, "alt": fig.alt, "caption": fig.caption}

    sources = code_closure("book/figures.py")
    found = remembered("figure", sources, (fig_id, drawing_setup()), draw, presets.files)
    texts = [found.get(k) if isinstance(found, dict) else None for k in ("svg", "alt", "caption")]
    if not all(isinstance(t, str) for t in texts):  # not what draw() returns: drawn again
        texts = list(draw().values())
    return Figure(fig_id, *texts)


@functools.cache
def drawing_setup() -> str:
    """What the SVG of a figure depends on besides its inputs, found without importing
    matplotlib: its version (its style defaults and bundled fonts; the house style overrides
    the rest) and every ``matplotlibrc`` it would read before its own (``$MATPLOTLIBRC``, the
    working folder's, the user's)."""
    from importlib import metadata

    config = os.environ.get("MPLCONFIGDIR") or os.path.join(
        os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "matplotlib"
    )
    chosen = os.environ.get("MATPLOTLIBRC", "")
    files = [chosen, os.path.join(chosen, "matplotlibrc"), "matplotlibrc"]
    files.append(os.path.join(config, "matplotlibrc"))
    parts = [metadata.version("matplotlib")]
    for name in files:
        if name and os.path.isfile(name):
            with open(name, "rb") as f:
                parts += [os.path.abspath(name), f.read().decode("utf-8", "replace")]
    return "\n".join(parts)


def figures_for(chapter: str, presets: Presets) -> dict:
    """The chapter's figures by id."""
    return {fig_id: drawn(fig_id, presets) for fig_id in CHAPTER_FIGURES.get(chapter, ())}


def undrawn(chapter: str, presets: Presets) -> list:
    """What draws each of the chapter's figures not drawn yet in this process, for
    ``book.parallel.beside``: drawn in a forked copy, a figure is found in the store here."""
    ids = CHAPTER_FIGURES.get(chapter, ())
    return [functools.partial(drawn, i, presets) for i in ids if (presets.files, i) not in _DRAWN]


__all__ = ["FIGURES", "Figure", "drawn", "figures_for", "load", "undrawn"]
