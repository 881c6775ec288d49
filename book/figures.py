"""Figures drawn from the equations at build time: SVG, one house style, light and dark mode.

Every curve is an equation evaluated on presets (compiled sweeps), and every caption and alt text
is written from the same numbers. The SVG is inlined into the page with its text and lines in
``currentColor``, so it takes the page's own foreground colour in either theme.

>>> fig = FIGURES["roofline"](load())
>>> fig.svg.startswith("<svg") and "currentColor" in fig.svg
True
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import numpy as np

from book.context import Evaluator
from book.format import number, quantity
from units import Q_
from units.presets import Presets, load

KCTX = "ktoken/sequence"  # context lengths are tokens per sequence

FOREGROUND = "#010101"  # replaced by currentColor in the SVG
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
    import matplotlib.pyplot as plt

    with plt.rc_context({**_style(), "svg.hashsalt": fig_id}):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        draw(fig, ax)
        fig.tight_layout()
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
        plt.close(fig)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = svg.replace(FOREGROUND, "currentColor")
    svg = "\n".join(line for line in svg.splitlines() if line.strip())  # one Markdown HTML block
    svg = re.sub(r'(<svg[^>]*?) width="[^"]+" height="[^"]+"', r"\1", svg, count=1)
    label = alt.replace('"', "&quot;")
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{label}" class="chalkboard-svg" ', 1)
    return Figure(fig_id, svg, alt, caption)


def _mark(ax, x, text, *, vertical=True):
    (ax.axvline if vertical else ax.axhline)(x, color=FOREGROUND, linestyle=":", linewidth=1)
    if vertical:
        ax.annotate(
            text,
            (x, 1),
            xycoords=("data", "axes fraction"),
            xytext=(4, -12),
            textcoords="offset points",
            fontsize=9,
        )
    else:
        ax.annotate(
            text,
            (0, x),
            xycoords=("axes fraction", "data"),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=9,
        )


# -- chapter A -------------------------------------------------------------------------------

EXAMPLE = dict(hardware="h100_sxm", model="deepseek_v3", precision="fp8")


def latency_vs_batch(presets: Presets) -> Figure:
    ev = Evaluator(presets, **EXAMPLE)
    b_star = ev.q("crossover_batch").to("sequence").m
    chips = ev.q("chips_to_fit", batch_size=b_star).to("chip").m
    n = Q_(np.ceil(chips), "chip")
    batches = np.linspace(1, 2.5 * b_star, 400)
    kw = dict(EXAMPLE, presets=presets, n_chips=n)
    from derivations import get

    lines = {
        "compute": get("compute_time").sweep("batch_size", batches, **kw).to("ms").m,
        "weight fetch": np.broadcast_to(
            get("weight_fetch_time").evaluate(**kw).to("ms").m, batches.shape
        ),
        "KV fetch": get("kv_fetch_time").sweep("batch_size", batches, **kw).to("ms").m,
    }
    total = get("step_time").sweep("batch_size", batches, **kw).to("ms").m
    at = ev.q("step_time", batch_size=b_star, n_chips=n)
    names = {k: presets.get(k, v).name for k, v in EXAMPLE.items() if k != "precision"}

    def draw(fig, ax):
        for label, y in lines.items():
            ax.plot(batches, y, label=label, linewidth=1.4)
        ax.plot(
            batches,
            total,
            color=FOREGROUND,
            linewidth=2.8,
            label="step time (max of compute, memory)",
        )
        _mark(ax, b_star, f"B* = {quantity(Q_(b_star, 'sequence'))}")
        ax.set_xlabel("batch size B (sequences)")
        ax.set_ylabel("time per decode step (ms)")
        ax.set_xlim(0, batches[-1])
        ax.set_ylim(0, None)
        ax.legend(loc="upper left")

    alt = (
        f"Decode step time against batch size for {names['model']} on {quantity(n)} of "
        f"{names['hardware']} at FP8: compute rises from the origin, weight fetch is flat, KV "
        f"fetch rises with the batch; the step time is their roofline and compute meets weight "
        f"fetch at B* = {quantity(Q_(b_star, 'sequence'))}, where a step takes {quantity(at)}."
    )
    caption = (
        f"The lecture's central picture, computed: {names['model']} on {quantity(n)} of "
        f"{names['hardware']} (FP8, default context). Compute meets weight fetch at "
        f"B* = {quantity(Q_(b_star, 'sequence'))}; the KV cache then keeps memory ahead."
    )
    return _render("latency_vs_batch", draw, alt, caption)


def cost_vs_batch(presets: Presets) -> Figure:
    from derivations import get

    ev = Evaluator(presets, **EXAMPLE)
    batches = np.geomspace(1, 1e5, 300)
    kw = dict(EXAMPLE, presets=presets)
    cost = get("cost_per_token").sweep("batch_size", batches, **kw).to("USD/Mtoken").m
    floor = ev.q("compute_cost_floor").to("USD/Mtoken")
    b_star = ev.q("crossover_batch").to("sequence").m
    one = ev.q("cost_per_token", batch_size=1).to("USD/Mtoken")

    def draw(fig, ax):
        ax.loglog(batches, cost, linewidth=2.4, color=FOREGROUND, label="cost per token")
        _mark(ax, floor.m, f"compute floor {quantity(floor)}", vertical=False)
        _mark(ax, b_star, "B*")
        ax.set_xlabel("batch size B (sequences)")
        ax.set_ylabel("cost (USD per million tokens)")
        ax.legend(loc="upper right")

    alt = (
        f"Cost per token against batch size, log-log, for the same example: a hyperbola from "
        f"{quantity(one)} at one sequence down toward a floor of {quantity(floor)}."
    )
    caption = (
        f"Cost per token falls as 1/B while weight reads dominate, then flattens near the "
        f"compute floor ({quantity(floor)}) plus the KV cache's share. At one sequence a token "
        f"costs {quantity(one)}."
    )
    return _render("cost_vs_batch", draw, alt, caption)


def roofline(presets: Presets) -> Figure:
    chips = [h for h in presets.hardware.values() if h.get("dense_flops_bf16") is not None]
    intensity = np.geomspace(1, 3e3, 200)

    def draw(fig, ax):
        for i, hw in enumerate(chips):
            f = hw.dense_flops_bf16.to("TFLOP/s").m
            w = hw.hbm_bandwidth.to("TB/s").m
            ridge = Evaluator(presets, hw.id).q("ridge_intensity").to("FLOP/byte").m
            color, style = PALETTE[i % len(PALETTE)], ("-", "--", ":")[i // len(PALETTE)]
            ax.loglog(
                intensity,
                np.minimum(f, intensity * w),
                linewidth=1,
                color=color,
                linestyle=style,
                alpha=0.85,
                label=f"{hw.id} ({ridge:.0f})",
            )
            ax.plot([ridge], [f], "o", color=color, markersize=4)
        fig.set_size_inches(8, 4.6)
        ax.legend(
            loc="center left",
            bbox_to_anchor=(1.01, 0.5),
            fontsize=7,
            title="chip (ridge, FLOP/byte)",
            title_fontsize=7,
        )
        ax.set_xlabel("arithmetic intensity (FLOP per byte of HBM read)")
        ax.set_ylabel("attainable BF16 TFLOP/s")

    ridges = [Evaluator(presets, h.id).q("ridge_intensity").to("FLOP/byte") for h in chips]
    low, high = min(ridges), max(ridges)
    alt = (
        f"Rooflines of {len(chips)} chips at dense BF16: attainable FLOP/s rises with arithmetic "
        f"intensity until each chip's ridge point, between {quantity(low)} and {quantity(high)}."
    )
    caption = (
        f"Every hardware preset's roofline; the dots are the ridge points, from {quantity(low)} "
        f"to {quantity(high)}. A decode step's intensity is about the batch size."
    )
    return _render("roofline", draw, alt, caption)


def drain_ladder(presets: Presets) -> Figure:
    rows = [
        (h.name, Evaluator(presets, h.id).q("hbm_drain_time").to("s").m, "HBM")
        for h in presets.hardware.values()
    ]
    for tier in presets.tier.values():
        ev = Evaluator(presets, tier=tier.id)
        rows.append((tier.name, ev.q("storage_tier_drain_time").to("s").m, tier.medium))
    short = presets.parameter["cache_duration_short"].value
    long = presets.parameter["cache_duration_long"].value
    media = sorted({m for _, _, m in rows})

    def draw(fig, ax):
        fig.set_size_inches(7, 6.5)
        ys = np.arange(len(rows))
        colors = [PALETTE[media.index(m) % len(PALETTE)] for _, _, m in rows]
        ax.barh(ys, [t for _, t, _ in rows], color=colors)
        ax.set_yticks(ys, [n for n, _, _ in rows], fontsize=7)
        ax.set_xscale("log")
        ax.invert_yaxis()
        from matplotlib.patches import Patch

        for q in (short, long):
            ax.axvline(q.to("s").m, color=FOREGROUND, linestyle=":", linewidth=1)
            ax.annotate(
                f"{quantity(q)} cache",
                (q.to("s").m, 0),
                xycoords=("data", "axes fraction"),
                xytext=(-3, 4),
                textcoords="offset points",
                rotation=90,
                fontsize=8,
                ha="right",
                va="bottom",
            )
        handles = [Patch(color=PALETTE[i % len(PALETTE)], label=m) for i, m in enumerate(media)]
        ax.legend(handles=handles, loc="center right", fontsize=8)
        ax.set_xlabel("hold time = capacity / bandwidth (s)")
        ax.grid(axis="y", visible=False)

    flash = next(t for t in presets.tier.values() if t.medium == "flash")
    disk = next(t for t in presets.tier.values() if t.medium == "disk")
    flash_hold = Evaluator(presets, tier=flash.id).q("storage_tier_drain_time").to("minute")
    disk_hold = Evaluator(presets, tier=disk.id).q("storage_tier_drain_time").to("hour")
    alt = (
        f"Hold times (capacity over bandwidth) on a log scale: every chip's HBM in milliseconds, "
        f"then DRAM, flash and disk, against the {quantity(short)} and {quantity(long)} cache "
        f"lifetimes."
    )
    tiers = sorted(
        (Evaluator(presets, tier=t.id).q("storage_tier_drain_time"), t.medium)
        for t in presets.tier.values()
    )

    def between(life) -> str:
        below = [m for h, m in tiers if h < life]
        above = [m for h, m in tiers if h >= life]
        return f"between {below[-1]} and {above[0]}" if below and above else "beyond every tier"

    caption = (
        f"The memory-tier ladder by the drain-time rule (hold time = capacity / bandwidth; the "
        f"share of the device a cache fills cancels): HBM holds for milliseconds, DRAM for "
        f"seconds, flash for {quantity(flash_hold)} and disk for {quantity(disk_hold)}. By this "
        f"rule alone the {quantity(short)} cache falls {between(short)} and the {quantity(long)} "
        f"cache {between(long)}; the chapter's break-even column reads them as DRAM and flash."
    )
    return _render("drain_ladder", draw, alt, caption)


# -- chapters C-D ----------------------------------------------------------------------------


def memory_vs_stages(presets: Presets) -> Figure:
    from book.chapters import pipeline

    ev = Evaluator(presets, pipeline.RACK, pipeline.MODEL, "fp8")
    split = [pipeline.memory_split(ev, pipeline_stages=Q_(p, "stage")) for p in pipeline.STAGES]
    weights = [w.to("GB").m for w, _ in split]
    kvs = [k.to("GB").m for _, k in split]
    hbm = presets.get("hardware", pipeline.RACK).hbm_capacity.to("GB")
    model, rack = (
        presets.get("model", pipeline.MODEL).name,
        presets.get("hardware", pipeline.RACK).name,
    )

    def draw(fig, ax):
        x = np.arange(len(pipeline.STAGES))
        ax.bar(x, weights, label="weights", color=PALETTE[0])
        ax.bar(x, kvs, bottom=weights, label="KV cache", color=PALETTE[1])
        ax.set_xticks(x, [str(p) for p in pipeline.STAGES])
        _mark(ax, hbm.m, f"HBM per chip {quantity(hbm)}", vertical=False)
        ax.set_xlabel("pipeline stages P")
        ax.set_ylabel("HBM needed per chip (GB)")
        ax.legend(loc="upper right")

    alt = (
        f"Stacked bars of HBM per chip against pipeline stages for {model} on "
        f"{rack} at FP8: the weights shrink from {quantity(Q_(weights[0], 'GB'))} to "
        f"{quantity(Q_(weights[-1], 'GB'))} while the KV cache stays at "
        f"{quantity(Q_(kvs[0], 'GB'))}."
    )
    caption = (
        f"Pipelining divides the weights by the stage count; the KV cache per chip stays "
        f"{quantity(Q_(kvs[0], 'GB'))} because as many micro-batches are in flight as stages."
    )
    return _render("memory_vs_stages", draw, alt, caption)


BUBBLE_STAGES = (2, 4, 8, 16)


def pipeline_bubble(presets: Presets) -> Figure:
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
            ax.semilogx(micro, y, label=f"P = {p}", linewidth=1.6)
        ax.set_xlabel("micro-batches per step m")
        ax.set_ylabel("bubble fraction")
        ax.set_ylim(0, 1)
        ax.legend(loc="upper right")

    alt = (
        "Bubble fraction of a fill-and-drain pipeline against micro-batches for "
        f"{BUBBLE_STAGES[0]} to {BUBBLE_STAGES[-1]} stages: "
        "each curve falls from near one toward zero as micro-batches grow."
    )
    caption = (
        f"The training bubble (P - 1)/(m + P - 1). With the defaults it is "
        f"{quantity(default)} of a step."
    )
    return _render("pipeline_bubble", draw, alt, caption)


# -- chapter E -------------------------------------------------------------------------------


def chinchilla_contours(presets: Presets) -> Figure:
    from derivations import get

    fit = next(iter(presets.fit.values()))
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
    frontier = presets.parameter["frontier_active_params"].value.to("parameter").m
    balanced = Evaluator(presets).q("balanced_training_tokens").to("token").m
    chin_n = presets.parameter["chinchilla_model_params"].value.to("parameter").m
    chin_d = presets.parameter["chinchilla_model_tokens"].value.to("token").m
    factor = Evaluator(presets, n_active=Q_(frontier, "parameter")).q(
        "balanced_overtraining_factor"
    )

    def draw(fig, ax):
        cs = ax.contour(nn, dd, loss, levels=12, linewidths=0.8, cmap="viridis")
        ax.clabel(cs, fontsize=7, fmt="%.2f")
        ax.loglog(n_star, d_star, color=FOREGROUND, linewidth=2, label="compute-optimal (N*, D*)")
        ax.plot([chin_n], [chin_d], "s", color=PALETTE[2], label="Chinchilla")
        ax.plot(
            [frontier],
            [balanced],
            "o",
            color=PALETTE[3],
            label="equal-cost frontier model (over-trained)",
        )
        ax.set_xlabel("parameters N")
        ax.set_ylabel("training tokens D")
        ax.legend(loc="lower right", fontsize=8)

    alt = (
        f"Iso-loss contours of the {fit.name} fit over parameters and tokens, with the "
        f"compute-optimal path, Chinchilla's own point, and the lecture's frontier model "
        f"{factor.m:.0f} times past the Chinchilla token count."
    )
    caption = (
        f"Chinchilla iso-loss contours ({fit.name}). The bold line is the compute-optimal path; "
        f"the equal-cost frontier model sits far above it, over-trained "
        f"{quantity(factor)} times against "
        f"{quantity(presets.parameter['chinchilla_tokens_per_param'].value)}."
    )
    return _render("chinchilla_contours", draw, alt, caption)


# -- chapter F -------------------------------------------------------------------------------


def cost_vs_context(presets: Presets) -> Figure:
    from derivations import get

    ev = Evaluator(presets, **EXAMPLE)
    b_star = ev.q("crossover_batch")
    contexts = np.geomspace(1e3, 1e6, 300)
    cost = (
        get("cost_per_token")
        .sweep("context_length", contexts, **EXAMPLE, presets=presets, batch_size=b_star)
        .to("USD/Mtoken")
        .m
    )
    kink = presets.parameter["price_kink_context"].value.to("token/sequence")
    crossover = ev.q("kv_compute_crossover_context").to("token/sequence")

    def draw(fig, ax):
        ax.loglog(contexts, cost, color=FOREGROUND, linewidth=2.4, label="cost per token")
        _mark(ax, kink.m, f"price kink {quantity(kink.to(KCTX))}")
        _mark(ax, crossover.m, "KV = compute")
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("cost (USD per million tokens)")
        ax.legend(loc="upper left")

    alt = (
        f"Cost per token against context length at the crossover batch for the same example: "
        f"flat while compute dominates, then rising linearly once KV fetch overtakes compute at "
        f"{quantity(crossover.to(KCTX))}; the long-context price kink is marked at "
        f"{quantity(kink.to(KCTX))}."
    )
    caption = (
        f"Cost per token grows with context once the KV cache outweighs compute "
        f"({quantity(crossover.to(KCTX))} here). A provider whose kink sits at "
        f"{quantity(kink.to(KCTX))} has a far smaller KV cache per token."
    )
    return _render("cost_vs_context", draw, alt, caption)


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
    from book.validation import summary, validate

    rows = [r for r in validate(presets) if r.efficiency is not None]
    bands = summary(rows)
    lo = min(min(r.bound.m, r.measured.m) for r in rows) / 2
    hi = max(max(r.bound.m, r.measured.m) for r in rows) * 2
    above = [r for r in rows if r.efficiency > 1]

    def draw(fig, ax):
        markers = "osD^v<>"
        for i, (scenario, label) in enumerate(SCENARIO_LABELS.items()):
            pts = [r for r in rows if r.scenario == scenario]
            if pts:
                ax.scatter(
                    [r.bound.m for r in pts],
                    [r.measured.m for r in pts],
                    label=label,
                    marker=markers[i % len(markers)],
                    s=22,
                )
        line = np.array([lo, hi])
        ax.plot(line, line, color=FOREGROUND, linewidth=1.6, label="measured = bound")
        ax.plot(line, 0.1 * line, color=FOREGROUND, linewidth=0.8, linestyle=":")
        ax.annotate("10% of the bound", (hi / 3, 0.1 * hi / 3), fontsize=9, rotation=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("roofline bound (tokens/s per chip; per user for batch 1)")
        ax.set_ylabel("measured (same unit)")
        ax.legend(loc="upper left", fontsize=8)

    offline = bands.get("offline")
    alt = (
        f"Log-log scatter of {len(rows)} published measurements against their roofline bounds, "
        f"with the line measured = bound. {len(above)} points lie above it"
        + (f" ({', '.join(r.id for r in above)})" if above else "")
        + ". "
        + (
            f"Offline serving rows sit at a median of {number(100 * offline['median'], 3)}% "
            f"of the bound."
            if offline
            else ""
        )
    )
    caption = (
        f"Every measurement with a bound ({len(rows)} rows): measured against bound, both from "
        f"the same presets. Points below the line are the gap the roofline leaves; "
        f"{len(above)} above it are flagged with their cause."
    )
    return _render("measured_vs_bound", draw, alt, caption)


FIGURES = {
    "latency_vs_batch": latency_vs_batch,
    "cost_vs_batch": cost_vs_batch,
    "roofline": roofline,
    "drain_ladder": drain_ladder,
    "memory_vs_stages": memory_vs_stages,
    "pipeline_bubble": pipeline_bubble,
    "chinchilla_contours": chinchilla_contours,
    "cost_vs_context": cost_vs_context,
    "measured_vs_bound": measured_vs_bound,
}
CHAPTER_FIGURES = {
    "batching": ("latency_vs_batch", "cost_vs_batch", "roofline", "drain_ladder"),
    "pipeline": ("memory_vs_stages", "pipeline_bubble"),
    "overtraining": ("chinchilla_contours",),
    "long_context": ("cost_vs_context", "drain_ladder"),
    "validation": ("measured_vs_bound",),
}


_DRAWN: dict[tuple, Figure] = {}  # by the preset files behind it and figure id


def drawn(fig_id: str, presets: Presets) -> Figure:
    """The figure, drawn once per preset set (a figure used on two pages is drawn once)."""
    key = (presets.files, fig_id)
    if key not in _DRAWN:
        _DRAWN[key] = FIGURES[fig_id](presets)
    return _DRAWN[key]


def figures_for(chapter: str, presets: Presets) -> dict:
    """The chapter's figures by id."""
    return {fig_id: drawn(fig_id, presets) for fig_id in CHAPTER_FIGURES.get(chapter, ())}


__all__ = ["FIGURES", "Figure", "drawn", "figures_for", "load"]
