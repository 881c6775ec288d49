"""Chapter F's context: KV bytes and parameters per model, crossovers, prices read backwards,
and the memory-tier ladder.

>>> from units.presets import load
>>> rows = context(load())["models"]["rows"]
>>> rows[0]["name"]
'DeepSeek-V3 / R1'
"""

import math
import re

import derivations
from book.context import Evaluator, cell_in, header
from book.format import (
    Said,
    chip_name,
    context_tokens,
    number,
    quantity,
    said,
    said_number,
    spoken_number,
)
from units import Q_
from units.errors import ChalkboardError
from units.presets import Presets

HARDWARE = "h100_sxm"
KINK_HARDWARE = ("h100_sxm", "gb200_nvl72")


def context(presets: Presets) -> dict:
    frontier = presets.parameter["frontier_active_params"].value
    kink = [
        {
            "name": chip_name(presets.get("hardware", hw)),
            "bytes": Evaluator(presets, hw, precision="fp8", n_active=frontier).text(
                "kv_bytes_from_price_kink"
            ),
        }
        for hw in KINK_HARDWARE
    ]
    return {
        "models": _model_table(presets),
        "crossovers": _crossover_table(presets),
        "attention": _attention_table(presets),
        "hardware": chip_name(presets.get("hardware", HARDWARE)),
        "frontier": said(frontier.to("Gparameter")),
        "kink_context": context_tokens(presets.parameter["price_kink_context"].value),
        "kink": kink,
        "generations": _hbm_generations(presets),
        "fp8_bytes": quantity(presets.get("precision", "fp8").bytes_per_value),
        "apis": _api_table(presets),
        "api_dates": _api_dates(presets),
        "fast": {
            "price": quantity(presets.parameter["fast_price_multiplier"].value),
            "speed": quantity(presets.parameter["fast_speed_multiplier"].value),
            "ratio": Evaluator(presets).text("fast_mode_batch_ratio"),
            "smaller": said_number(1 / Evaluator(presets).q("fast_mode_batch_ratio").to("").m, 3),
            **_fast_on_roofline(presets),
        },
        "tiers": _tier_table(presets),
        "retrieval": _retrieval(presets),
        "hold_reading": _hold_reading(presets),
        "hold": {
            t.medium: _readable_time(Evaluator(presets, tier=t.id)) for t in presets.tier.values()
        },
        "context_length": context_tokens(presets.parameter["context_length"].value),
        "tier_model": presets.get("model", "llama_3_1_70b").name,
        **_kv_cache_and_cache_writes(presets),
        **_lecture_readings(presets),
        "attn": _attention_readings(presets),
        "kink_cache": _kink_cache(presets),
        "drain_nearest": _drain_nearest(presets),
        "kink_precision": _kink_precision(presets),
        "long_contexts": _long_contexts(presets),
        "tier_readings": _tier_readings(presets),
        "kv_mechanics": _kv_mechanics(presets),
        "steps": _two_steps(presets),
        "verdict": _cache_verdict(presets),
        "both": _both_steps(presets),
        "exercise": _exercises(presets),
    }


def _distinct_models(presets: Presets) -> list[tuple[str, str]]:
    """(id, name) of each model preset with an architecture of its own: a preset whose counted KV
    bytes and parameters equal an earlier one's (DeepSeek-R1 is DeepSeek-V3's network; Llama 3.3
    70B is Llama 3.1 70B's) joins that row's name instead of repeating it.

    >>> from units.presets import load
    >>> [n for _, n in _distinct_models(load())][:3]
    ['DeepSeek-V3 / R1', 'Llama 2 70B', 'Llama 3.3 70B / 3.1 70B']
    """
    rows: dict[tuple, list] = {}
    for m in presets.model.values():
        ev = Evaluator(presets, model=m.id)
        key = (m.attention, *(round(ev.q(f).m, 6) for f in ("kv_bytes_per_token", "params_total")))
        if key in rows:
            kept = rows[key]
            family, _, rest = m.name.partition(" ")
            if m.name.split("-")[-1] not in kept[1]:  # "DeepSeek-R1" is in "DeepSeek-V3 / R1"
                shown = rest if kept[1].startswith(family + " ") else m.name
                kept[1] = f"{kept[1]} / {shown}"  # "Llama 3.3 70B / 3.1 70B"
        else:
            rows[key] = [m.id, m.name]
    return [tuple(r) for r in rows.values()]


def _model_table(presets: Presets) -> dict:
    columns = (
        ("KV at BF16", "kB/token"),
        ("total (architecture)", "Gparameter"),
        ("total (published)", "Gparameter"),
        ("active (architecture)", "Gparameter"),
        ("active (published)", "Gparameter"),
    )
    rows = []
    for model_id, name in _distinct_models(presets):
        m = presets.get("model", model_id)
        ev = Evaluator(presets, model=m.id)
        values = (
            lambda ev=ev: ev.q("kv_bytes_per_token"),
            lambda ev=ev: ev.q("params_total"),
            lambda m=m: m.get("params_total"),
            lambda ev=ev: ev.q("params_active"),
            lambda m=m: m.get("params_active"),
        )
        gaps = [
            _gap(ev.q(f), m.get(f)) if m.get(f) is not None else "—"
            for f in ("params_total", "params_active")
        ]
        rows.append(
            {
                "name": name,
                "attention": m.attention.upper(),
                "cells": [_cell(u, f) for (_, u), f in zip(columns, values, strict=True)],
                "gaps": " / ".join(gaps),
            }
        )
    return {"headers": [header(n, u) for n, u in columns], "rows": rows}


def _gap(counted, published) -> str:
    """The counted figure's relative difference from the published one, 2 figures; a difference
    below 0.01% (floating-point noise or a published figure given in full) reads "same".

    >>> from units import Q_
    >>> _gap(Q_(70.6, "Gparameter"), Q_(70, "Gparameter")), _gap(Q_(8.03, ""), Q_(8.03, ""))
    ('0.86%', 'same')
    """
    x = 100 * ((counted / published).to("").magnitude - 1)
    return "same" if abs(x) < 0.01 else said_number(x, 2) + "%"


# figures in the per-model tables read in the chapter's flow (the attention and crossover
# tables), as the first section's corner table and the prose give them; the collapsed table of
# every preset keeps 4 figures for reference (reader lr29: 2-3 figures for reading)
READ_DIGITS = 2

# the equation giving a model's decode attention FLOPs per context token, by attention type
_DECODE_ATTENTION = {"gqa": "gqa_attention_flops", "mla": "mla_decode_attention_flops"}


def _attention_table(presets: Presets) -> dict:
    columns = (
        ("decode attention per context token", "MFLOP/token"),
        ("decode: attention = weights", "token"),
        ("prefill: attention = weights", "token"),
    )
    rows = []
    for model_id, name in _distinct_models(presets):
        m = presets.get("model", model_id)
        ev = Evaluator(presets, model=m.id)
        values = (
            lambda ev=ev, m=m: ev.q(_DECODE_ATTENTION[m.attention]),
            lambda ev=ev: ev.q("decode_attention_context") * ONE_SEQUENCE,
            lambda ev=ev: ev.q("prefill_attention_context") * ONE_SEQUENCE,
        )
        rows.append(
            {
                "name": name,
                "cells": [
                    _cell(u, f, READ_DIGITS) for (_, u), f in zip(columns, values, strict=True)
                ],
            }
        )
    return {"headers": [header(n, u) for n, u in columns], "rows": rows}


def _kv_compute_context(ev: Evaluator):
    """The KV-vs-compute crossover, or None (shown as a dash) when attention's FLOPs per KV byte
    reach the chip's ridge and compute stays ahead at every context."""
    try:
        return ev.q("kv_compute_crossover_context")
    except ChalkboardError as e:  # the equation's own "no crossover" answer, nothing else
        if "no crossover" not in str(e):
            raise
        return None


def _cell(in_unit: str, compute, digits: int | None = None) -> str:
    """A table cell as :func:`cell_in` gives it, a count of tokens whole ('421', not '420.6');
    with ``digits``, rounded to that many figures, as a table read in the chapter's flow prints
    it (reader lr29: '19,659' beside another table's '20,000'), never with a decimal point.

    >>> from units import Q_
    >>> corner = lambda: Q_(19659.4, "token")  # noqa: E731
    >>> _cell("token", corner), _cell("token", corner, 2)
    ('19,659', '20,000')
    >>> _cell("MFLOP/token", lambda: Q_(16.99, "MFLOP/token"), 2)
    '17'
    """
    if in_unit == "token":
        whole = compute
        compute = lambda: None if (q := whole()) is None else round(q.to("token"))  # noqa: E731
    if digits is None:
        return cell_in(in_unit, compute)
    exact = cell_in(in_unit, compute)
    if exact == "—":
        return exact
    return number(compute().to(in_unit).m, digits)


def _per_sequence(q):
    """A context (tokens per sequence) as the tokens of one sequence; None stays None."""
    return None if q is None else q * ONE_SEQUENCE


def _crossover_table(presets: Presets) -> dict:
    columns = (
        ("KV = compute", "token"),
        ("KV = weights at B*", "token"),
    )
    rows = []
    for model_id, name in _distinct_models(presets):
        ev = Evaluator(presets, HARDWARE, model_id)
        values = (
            lambda ev=ev: _per_sequence(_kv_compute_context(ev)),
            lambda ev=ev: (
                ev.q("kv_weight_crossover_context", batch_size=ev.q("crossover_batch"))
                * ONE_SEQUENCE
            ),
        )
        rows.append(
            {
                "name": name,
                "cells": [
                    _cell(u, f, READ_DIGITS) for (_, u), f in zip(columns, values, strict=True)
                ],
            }
        )
    # both columns are precision-free when weights, cache and math move together (reader blo21,
    # fault 3): bytes per FLOP and bytes per token scale alike; checked on the first model
    model_id = _distinct_models(presets)[0][0]
    ev, e8 = (Evaluator(presets, HARDWARE, model_id, p) for p in ("bf16", "fp8"))
    for q, batch in (
        ("kv_compute_crossover_context", False),
        ("kv_weight_crossover_context", True),
    ):
        a, b = (
            e.q(q, **({"batch_size": e.q("crossover_batch")} if batch else {})) for e in (ev, e8)
        )
        if abs((a / b).to("").m - 1) > 1e-3:
            raise ValueError(f"{q} moves with the precision: reword the BF16 table's note")
    return {"headers": [header(n, u) for n, u in columns], "rows": rows}


def _api_table(presets: Presets) -> list[dict]:
    """Each price list's input and output prices (bare numbers in USD per million tokens), the
    output/input ratio and the cache-hit discount."""
    rows = []
    for api in presets.api.values():
        ev = Evaluator(presets, api=api.id)
        rows.append(
            {
                "name": api.name,
                "as_of": api.as_of,
                "input": number(api.input.to("USD/Mtoken").m),
                "output": number(api.output.to("USD/Mtoken").m),
                "ratio": ev.text("decode_prefill_ratio_from_prices"),
                "discount": ev.text("cache_discount_from_prices")
                if api.get("cache_read") is not None
                else "—",
            }
        )
    return rows


def _api_dates(presets: Presets) -> list[dict]:
    """The price lists grouped by the date they were read: ``[{as_of, names}]``."""
    groups: dict[str, list[str]] = {}
    for api in presets.api.values():
        # the reader gets the date, not the internal file it was copied from ("(facts.md)")
        as_of = re.sub(r"\s*\([^()]*\.(?:md|toml|py)\)", "", api.as_of)
        groups.setdefault(as_of, []).append(api.name)
    return [{"as_of": d, "names": "; ".join(n)} for d, n in groups.items()]


ONE_SEQUENCE = Q_(1, "sequence")  # what one sequence holds or costs, from a figure per sequence


def _tier_table(presets: Presets) -> dict:
    columns = (
        ("capacity", "GB"),
        ("bandwidth", "GB/s"),
        ("hold one sequence's cache", "cent/hour"),
    )
    rows = []
    for tier in presets.tier.values():
        ev = Evaluator(presets, HARDWARE, "llama_3_1_70b", tier=tier.id)
        values = (
            lambda t=tier: t.capacity,
            lambda t=tier: t.bandwidth,
            lambda ev=ev: ev.q("cache_hold_cost") * ONE_SEQUENCE,
        )
        cells = [cell_in(u, f) for (_, u), f in zip(columns[:2], values[:2], strict=True)]
        cents = (ev.q("cache_hold_cost") * ONE_SEQUENCE).to("cent/hour").m
        cells.append(spoken_number(cents, most=3))  # money as a person says it
        # the times as a person reads them: '24 ms', '37 s', '20 min' (reader's report)
        cells.insert(2, _time_said(ev.q("storage_tier_drain_time")))
        even = _breakeven(ev)
        cells.append(NEVER if even is None else _time_said(even))
        rows.append({"name": tier.name, "medium": tier.medium, "cells": cells})
    headers = [header(n, u) for n, u in columns]
    headers.insert(2, "hold time (full drain)")
    headers[3] = "hold one sequence's cache (¢ per hour)"
    return {"headers": [*headers, "holding beats recomputing for"], "rows": rows}


def _breakeven(ev: Evaluator, **inputs):
    """How long holding a cache on a tier beats recomputing it, or None where reading it back
    alone costs more than a recompute (the equation's time would be negative: never)."""
    try:
        return ev.q("cache_breakeven_time", **inputs)
    except ChalkboardError as e:  # the equation's own "never" answer, nothing else
        if "costs more than recomputing" not in str(e):
            raise
        return None


NEVER = "never"


def _time_said(t) -> str:
    """A time in its natural unit, 2-3 figures: '24 ms', '37 s', '20 min', '23 hours'."""
    t = t.to("s")
    if t.m < 1:
        t = t.to("ms")
    elif t.m >= 7200:
        t = t.to("hour")
    elif t.m >= 120:
        t = t.to("minute")
    return said(t, 3).said


def _share(x: float) -> str:
    """A fraction as a reader says it: '5.6% of' below one, '7.5 times' above."""
    return f"{said_number(100 * x, 2)}% of" if x < 1 else f"{said_number(x, 2)} times"


def _retrieval(presets: Presets) -> dict:
    """Reading one sequence's cache back from each tier, against recomputing it on one chip: the
    cache's bytes over the tier's bandwidth, and the prefill FLOPs over the chip's FLOP rate
    (the recompute cost over the chip's rent)."""
    rows, recompute = [], None
    for tier in presets.tier.values():
        ev = Evaluator(presets, HARDWARE, "llama_3_1_70b", tier=tier.id)
        cost = ev.detailed("cache_recompute_cost")
        per_chip = cost.value / cost.inputs["price_per_chip_hour"].base / Q_(1, "chip")
        recompute = (per_chip * ONE_SEQUENCE).to("s")  # one sequence's cache
        read = (ev.q("kv_cache_per_sequence") * ONE_SEQUENCE / tier.bandwidth).to("s")
        shown = read.to("ms") if read < Q_(1, "s") else read
        rows.append({"medium": tier.medium, "time": said(shown), "share": read / recompute})
    return {
        "recompute": said(recompute),
        "rows": [{**r, "share": _share(r["share"].to("").m)} for r in rows],
        # tiers whose read back takes longer than a recompute: holding there never pays
        "slower": [r["medium"] for r in rows if r["share"].to("").m >= 1],
    }


def _hold_reading(presets: Presets) -> dict:
    """The tier each cache lifetime points to: the one whose break-even time is nearest to it.

    Holding a cache on a tier beats recomputing it for the tier's break-even time, so a lifetime
    belongs to the tier whose break-even time is closest to it (by ratio). The tier's hold time
    (capacity over bandwidth) is given alongside.
    """
    rows = []
    for tier in presets.tier.values():
        ev = Evaluator(presets, HARDWARE, "llama_3_1_70b", tier=tier.id)
        even = _breakeven(ev)
        if even is not None:  # a tier whose read back costs more than a recompute holds nothing
            rows.append((tier, ev.q("storage_tier_drain_time"), even))
    out = {}
    for key in ("cache_duration_short", "cache_duration_long"):
        life = presets.parameter[key].value
        tier, hold, even = min(rows, key=lambda r: abs(math.log((r[2] / life).to("").m)))
        out[key.removeprefix("cache_duration_")] = {
            "life": said(life),
            "medium": tier.medium,
            "breakeven": said(even.to("minute")),
            "hold": said(hold.to("minute")),
        }
    return out


def _tier_readings(presets: Presets) -> list[dict]:
    """Each cache lifetime read four ways, in one table (reader's report, long-context fault 2):
    the lecture's drain-time rule on its own guessed hold times, the same rule on the true ones,
    and hold-or-recompute (the tier whose break-even time is nearest the lifetime, by ratio) for
    Llama 3.1 70B's cache and for the kink-sized cache."""
    tiers = list(presets.tier.values())
    guessed = {
        "flash": presets.parameter["lecture_flash_hold"].value,
        "disk": presets.parameter["lecture_disk_hold"].value,
    }
    kink = _kink_evaluator(presets)

    def nearest(pairs, life):
        return min(pairs, key=lambda r: abs(math.log((r[1] / life).to("").m)))[0]

    rows = []
    for key in ("cache_duration_short", "cache_duration_long"):
        life = presets.parameter[key].value
        drain = [
            (t.medium, Evaluator(presets, tier=t.id).q("storage_tier_drain_time")) for t in tiers
        ]
        llama = [
            (t.medium, e)
            for t in tiers
            if (e := _breakeven(Evaluator(presets, HARDWARE, KV_MODEL, tier=t.id))) is not None
        ]
        sized = [(t.medium, e) for t in tiers if (e := _breakeven(kink, tier=t.id)) is not None]
        rows.append(
            {
                "life": said(life),
                "lecture": nearest(list(guessed.items()), life),
                "drain": nearest(drain, life),
                "llama": nearest(llama, life),
                "kink": nearest(sized, life),
            }
        )
    return rows


def _readable_time(ev: Evaluator) -> str:
    """A tier's hold time in seconds under two minutes, in minutes up to two hours, in hours
    beyond."""
    t = ev.q("storage_tier_drain_time").to("minute")
    if t.magnitude < 2:
        return said(t.to("s") if t.to("s").magnitude >= 1 else t.to("ms"))
    return said(t if t.magnitude < 120 else t.to("hour"))


KV_MODEL = "llama_3_1_70b"
KV_BATCH = 64  # sequences: an illustrative batch for the KV-cache-per-batch example
CACHE_API = "claude_opus_4_6"


def _kv_cache_and_cache_writes(presets: Presets) -> dict:
    """KV bytes per sequence and per batch, and the cache-write premium against the cost of
    holding the cache on each tier for the cache's lifetime (5 minutes and 1 hour)."""
    ev = Evaluator(presets, HARDWARE, KV_MODEL)
    batch = Q_(KV_BATCH, "sequence")
    api = presets.get("api", CACHE_API)
    lifetimes = (
        ("cache_write_5min", presets.parameter["cache_duration_short"].value),
        ("cache_write_1h", presets.parameter["cache_duration_long"].value),
    )
    rows = []
    for field, life in lifetimes:
        price = api.get(field)
        cache = Evaluator(presets, HARDWARE, KV_MODEL, api=CACHE_API, cache_write_price=price)
        rows.append(
            {
                "lifetime": said(life),
                "write": quantity(price.to("USD/Mtoken")),
                "premium": cache.text("cache_write_premium"),
                "write_bare": number(price.to("USD/Mtoken").m),
                "premium_bare": number(cache.q("cache_write_premium").to("USD/Mtoken").m),
                "cells": [
                    cell_in(
                        "",
                        lambda t=t, c=cache, life=life: c.q(
                            "cache_premium_over_hold", tier=t.id, cache_lifetime=life
                        ),
                    )
                    for t in presets.tier.values()
                ],
                "said": [  # the same ratios as a sentence says them (2-3 figures)
                    said_number(
                        cache.q("cache_premium_over_hold", tier=t.id, cache_lifetime=life).to("").m,
                        2,
                    )
                    for t in presets.tier.values()
                ],
            }
        )
    return {
        "kv_cache": {
            "model": presets.get("model", KV_MODEL).name,
            "per_sequence": said((ev.q("kv_cache_per_sequence") * ONE_SEQUENCE).to("GB")),
            "batch": said(batch),
            "per_batch": ev.text("kv_cache_per_batch", batch_size=batch),
            "hbm": quantity(presets.get("hardware", HARDWARE).hbm_capacity),
        },
        "cache_write": {
            "api": api.name,
            "input": quantity(api.input.to("USD/Mtoken")),
            "tiers": [t.name for t in presets.tier.values()],
            "media": [t.medium for t in presets.tier.values()],
            "rows": rows,
        },
    }


SHARED_LAYERS = 1  # unique KV layers in the lecture's check: "1 * 2 * 128 * 8"
KV_PAIR = 2  # a key and a value per KV head (gqa_kv_values_per_token's factor)
WINDOW_MODEL = "gpt_oss_120b"
PRICE_API = "claude_opus_4_6"
CHEAP_API = "deepseek_v3_2"


def _ratio(q) -> str:
    return said(q.to(""), 3)


def _lecture_readings(presets: Presets) -> dict:
    """The numbers the chapter's argument walks through: Gemini's step, the kink's bytes beside a
    real model's, the lecture's 2 KB check, decode's memory-boundness from prices, the context
    plateau against HBM, and the drain-time rule beside the lecture's reading."""
    short, long_ = presets.get("api", "gemini_2_5_pro"), presets.get("api", "gemini_2_5_pro_long")
    kink_ctx = presets.parameter["price_kink_context"].value.to("token/sequence")
    frontier = presets.parameter["frontier_active_params"].value
    kink_ev = Evaluator(presets, HARDWARE, precision="fp8", n_active=frontier)
    implied = kink_ev.q("kv_bytes_from_price_kink").to("byte/token")
    hw = presets.get("hardware", HARDWARE)
    kv_model = presets.get("model", KV_MODEL)
    kv8 = Evaluator(presets, HARDWARE, KV_MODEL, precision="fp8")
    llama_fp8 = kv8.q("kv_bytes_per_token").to("byte/token")
    shared = kv8.q("kv_bytes_per_token", global_layers=SHARED_LAYERS).to("byte/token")
    window = presets.get("model", WINDOW_MODEL)
    win = Evaluator(presets, HARDWARE, WINDOW_MODEL)
    win_full = win.q("kv_bytes_per_token", global_layers=window.get("layers"))
    api = presets.get("api", PRICE_API)
    bf16 = Evaluator(presets, HARDWARE, KV_MODEL)
    # one sequence's cache (the equation gives bytes per sequence)
    seq_short = bf16.q("kv_cache_per_sequence") * ONE_SEQUENCE
    seq_long = bf16.q("kv_cache_per_sequence", context_length=kink_ctx) * ONE_SEQUENCE
    hbm = hw.hbm_capacity
    tiers = {t.medium: t for t in presets.tier.values()}
    flash_hold = Evaluator(presets, tier=tiers["flash"].id).q("storage_tier_drain_time")
    disk_hold = Evaluator(presets, tier=tiers["disk"].id).q("storage_tier_drain_time")
    said_flash = presets.parameter["lecture_flash_hold"].value
    said_disk = presets.parameter["lecture_disk_hold"].value
    evens = {
        t.medium: _breakeven(Evaluator(presets, HARDWARE, KV_MODEL, tier=t.id))
        for t in presets.tier.values()
    }
    breakeven = {m: NEVER if e is None else said(e.to("minute")) for m, e in evens.items()}
    return {
        "breakeven": breakeven,
        "gemini": {
            "name": short.name.split(",")[0],
            "short_in": quantity(short.input.to("USD/Mtoken")),
            "long_in": quantity(long_.input.to("USD/Mtoken")),
            "short_out": quantity(short.output.to("USD/Mtoken")),
            "long_out": quantity(long_.output.to("USD/Mtoken")),
            "in_ratio": _ratio(long_.input / short.input),
            "out_ratio": _ratio(long_.output / short.output),
            "lecture_step": _ratio(presets.parameter["lecture_long_price_step"].value),
        },
        "ridge": said_number(
            Evaluator(presets, HARDWARE, precision="fp8").q("ridge_intensity").to("FLOP/byte").m, 3
        ),
        "doubled": {
            "bytes": said(
                kink_ev.q("kv_bytes_from_price_kink", mem_bandwidth=2 * hw.hbm_bandwidth), 3
            ),
            "bandwidth": said(2 * hw.hbm_bandwidth),
        },
        "kink_round": said(implied.to("kB/token"), 2),
        "kink_bytes": said(implied),
        "llama_fp8": said(llama_fp8.to("kB/token")),
        "llama_over_kink": said_number((llama_fp8 / implied).to("").m, 2),
        "shared": {
            "model": kv_model.name,
            "layers": said(Q_(SHARED_LAYERS, "")),
            "pair": said(Q_(KV_PAIR, "")),
            "all_layers": said(Q_(kv_model.get("layers"), "")),
            "head_dim": said(Q_(kv_model.get("head_dim"), "")),
            "kv_heads": said(Q_(kv_model.get("n_kv_heads"), "")),
            "bytes": said(shared),
            "over_kink": _ratio(shared / implied),
            "full": said(llama_fp8.to("kB/token")),
        },
        "window": {
            "model": window.name,
            "layers": said(Q_(window.get("layers"), "")),
            "global": said(win.q("global_attention_layers")),
            "bytes": win.text("kv_bytes_per_token"),
            "full": said(win_full),
        },
        "price_ratio": {
            "api": api.name,
            "input": quantity(api.input.to("USD/Mtoken")),
            "output": quantity(api.output.to("USD/Mtoken")),
            "ratio": Evaluator(presets, api=PRICE_API).text("decode_prefill_ratio_from_prices"),
            "discount": Evaluator(presets, api=PRICE_API).text("cache_discount_from_prices"),
            "read": quantity(api.cache_read.to("USD/Mtoken")),
            "cheap": presets.get("api", CHEAP_API).name,
            "cheap_ratio": Evaluator(presets, api=CHEAP_API).text(
                "decode_prefill_ratio_from_prices"
            ),
        },
        "wall": {
            "short": context_tokens(presets.parameter["context_length"].value),
            "long": context_tokens(kink_ctx),
            "seq_short": said(seq_short.to("GB")),
            "seq_long": said(seq_long.to("GB")),
            "share": _ratio(seq_long / hbm),
            "hbm": said(hbm),
            "seqs_short": said_number((hbm / seq_short).to("").m, 2),
        },
        "drain": {
            "flash": said(flash_hold.to("minute"), 3),
            "disk": said(disk_hold.to("hour"), 3),
            "said_flash": said(said_flash),
            "said_disk": said(said_disk),
            "flash_off": said_number((flash_hold / said_flash).to("").m, 2),
            "disk_off": said_number((disk_hold / said_disk).to("").m, 2),
        },
    }


GENERATIONS = ("a100_sxm", "h100_sxm", "b200")  # three generations of one vendor's chip


def _growth(x: float) -> str:
    """A growth factor as prose says it: 'not at all' when it stays, '×2.3' otherwise."""
    return "not at all" if abs(x - 1) < 0.005 else f"×{said_number(x, 2)}"


def _hbm_generations(presets: Presets) -> dict:
    """How a chip's FLOPs, HBM bandwidth and HBM capacity grew over three generations (A100 ->
    H100 -> B200, dense BF16, the one precision all three have), and from the H100 to the
    GB200 at FP8 (the kink reading's two chips): which quantity kept pace with FLOPs and which
    did not (reader lc27, fault 2: 'grew far more slowly' against 'barely moved')."""
    chips = [presets.get("hardware", h) for h in GENERATIONS]
    fields = {
        "flops": lambda c: c.dense_flops_bf16,
        "bandwidth": lambda c: c.hbm_bandwidth,
        "capacity": lambda c: c.hbm_capacity,
    }
    out: dict = {"chips": [chip_name(c) for c in chips]}
    total = {}
    for key, get in fields.items():
        steps = [(get(b) / get(a)).to("").m for a, b in zip(chips, chips[1:], strict=False)]
        total[key] = (get(chips[-1]) / get(chips[0])).to("").m
        out[key] = {"steps": [_growth(x) for x in steps], "total": _growth(total[key])}
    # the words the prose uses, checked: bandwidth fell behind FLOPs in the first step and kept
    # pace in the second; capacity grew at under half FLOPs' pace overall
    bw, fl = out["bandwidth"], out["flops"]
    first = [(fields[k](chips[1]) / fields[k](chips[0])).to("").m for k in ("flops", "bandwidth")]
    second = [(fields[k](chips[2]) / fields[k](chips[1])).to("").m for k in ("flops", "bandwidth")]
    if not (first[1] < 0.6 * first[0] and abs(second[1] / second[0] - 1) < 0.1):
        raise ValueError(f"bandwidth against FLOPs moved ({bw}, {fl}): reword the memory wall")
    if not total["capacity"] < 0.5 * total["flops"]:
        raise ValueError("HBM capacity kept pace with FLOPs: reword the memory wall")
    # the kink reading's two chips at FP8
    h100, gb200 = (presets.get("hardware", h) for h in KINK_HARDWARE)
    out["kink"] = {
        "flops": _growth((gb200.dense_flops_fp8 / h100.dense_flops_fp8).to("").m),
        "bandwidth": _growth((gb200.hbm_bandwidth / h100.hbm_bandwidth).to("").m),
    }
    return out


MLA_MODEL = "deepseek_v3"
LOW_RIDGE_CHIP = "a100_sxm"
DENSE_MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")


def _whole_tokens(q) -> str:
    """A context as the attention table prints it, a whole count of tokens ('53,864 tokens'),
    so prose and table give one rounding (reader's report 3: 53,860 against 53,864)."""
    whole = round(q.to("token/sequence").m)
    return context_tokens(Q_(whole, "token/sequence"), len(str(whole)))


def _tokens_said(q, exact: str | None = None) -> Said:
    """A context as tables and tests read it (whole tokens, or ``exact``) and as prose says it,
    two figures ('4,355 tokens' said '4,400 tokens'; reader lr28: 2-3 figures in prose).

    >>> from units import Q_
    >>> t = _tokens_said(Q_(4355.2, "token/sequence"))
    >>> t, t.said
    ('4,355 tokens', '4,400 tokens')
    """
    return Said(exact or _whole_tokens(q), context_tokens(q, 2))


def _attention_readings(presets: Presets) -> dict:
    """Attention FLOPs per context token against the weights' FLOPs and against the KV bytes:
    where attention doubles decode's and prefill's compute, and how far MLA moves the KV-vs-compute
    crossover (or removes it, on a chip whose FLOPs per byte are below MLA's)."""
    mla = Evaluator(presets, HARDWARE, MLA_MODEL)
    gqa = Evaluator(presets, HARDWARE, KV_MODEL)
    low = Evaluator(presets, LOW_RIDGE_CHIP, MLA_MODEL)

    mla_flops = mla.q("mla_decode_attention_flops")
    gqa_flops = gqa.q("gqa_attention_flops")

    def per_byte(ev: Evaluator, flops) -> float:
        return (flops / ev.q("kv_bytes_per_token")).to("FLOP/byte").m

    mla_decode = mla.q("decode_attention_context").to("token/sequence")
    # prefill runs MLA un-absorbed (keys and values expanded per head): fewer FLOPs per pair than
    # decode's absorbed form, so its break-even is not the dense rows' 2x decode's
    mla_prefill_flops = mla.q("mla_prefill_attention_flops")
    mla_prefill = mla.q("prefill_attention_context").to("token/sequence")
    prefill = [
        (presets.get("model", m).name, Evaluator(presets, model=m).q("prefill_attention_context"))
        for m in DENSE_MODELS
    ]
    middle = sorted(q.to("token/sequence").m for _, q in prefill)[len(prefill) // 2]
    return {
        "mla_model": presets.get("model", MLA_MODEL).name,
        # the active parameters every figure here uses, the published count (reader lr26,
        # fault 7), beside the count from the architecture the preset table shows
        "mla_active": said(presets.get("model", MLA_MODEL).params_active.to("Gparameter")),
        "mla_active_counted": quantity(mla.q("params_active").to("Gparameter"), 4),
        "gqa_model": presets.get("model", KV_MODEL).name,
        "mla_flops": said(mla_flops.to("MFLOP/token"), 3),
        "mla_decode": _tokens_said(mla_decode),
        "mla_prefill_flops": said(mla_prefill_flops.to("MFLOP/token"), 2),
        "mla_prefill": _tokens_said(mla_prefill),
        "mla_prefill_over_decode": said_number((mla_prefill / mla_decode).to("").m, 2),
        "mla_flops_ratio": said_number((mla_flops / mla_prefill_flops).to("").m, 2),
        "gqa_decode": _tokens_said(gqa.q("decode_attention_context")),
        "gqa_per_byte": said_number(per_byte(gqa, gqa_flops), 2),
        "mla_per_byte": said_number(per_byte(mla, mla_flops), 3),
        "ridge": said_number(mla.q("ridge_intensity").to("FLOP/byte").m, 3),
        # 2 figures, as the crossover table's row for the same model and chip prints it
        "mla_crossover": context_tokens(mla.q("kv_compute_crossover_context"), READ_DIGITS),
        "low_chip": chip_name(presets.get("hardware", LOW_RIDGE_CHIP)),
        "low_ridge": said_number(low.q("ridge_intensity").to("FLOP/byte").m, 3),
        "prefill": [{"name": n, "value": context_tokens(q, 2)} for n, q in prefill],
        "prefill_round": said_number(middle, 1),
    }


KINK_PRECISION_CHIPS = (("h100_sxm", "bf16"), ("b200", "fp4"))  # the kink read at other precisions


def _kink_evaluator(presets: Presets, hardware: str = HARDWARE) -> Evaluator:
    """The model a price kink implies: the lecture's frontier active parameters on ``hardware`` at
    FP8, its KV bytes per token read from the kink, and (as the kink reading does) no attention
    FLOPs, so that a prefill token costs the weights' FLOPs alone."""
    frontier = presets.parameter["frontier_active_params"].value
    kink = Evaluator(presets, hardware, precision="fp8", n_active=frontier)
    forward = derivations.SYMBOLS["flops_per_param_token"].value * frontier
    return Evaluator(
        presets,
        hardware,
        precision="fp8",
        n_active=frontier,
        kv_bytes_per_token=kink.q("kv_bytes_from_price_kink"),
        prefill_flops_per_token=forward,
    )


def _kink_precision(presets: Presets) -> dict:
    """The KV bytes a kink implies scale with the chip's bytes per FLOP, so with the compute
    precision assumed: FP8 (the chapter's), BF16 (twice) and FP4 on a Blackwell (about half)."""
    frontier = presets.parameter["frontier_active_params"].value
    rows = []
    for hw, precision in KINK_PRECISION_CHIPS:
        ev = Evaluator(presets, hw, precision=precision, n_active=frontier)
        rows.append(
            {
                "chip": chip_name(presets.get("hardware", hw)),
                "precision": precision.upper(),
                "bytes": said(ev.q("kv_bytes_from_price_kink").to("kB/token"), 2),
            }
        )
    return {"rows": rows}


def _kink_cache(presets: Presets) -> dict:
    """Hold or recompute for the cache a price kink implies (about 1.7 kB per token), beside the
    Llama 3.1 70B cache of the tier table: break-even time per tier, the write premium's cover of
    each tier's rent, and the identity behind HBM's break-even (the kink's context times HBM's
    drain time, whatever the model's size or precision)."""
    ev = _kink_evaluator(presets)
    llama = Evaluator(presets, HARDWARE, KV_MODEL)
    k = ev.fixed["kv_bytes_per_token"].to("byte/token")
    api = presets.get("api", CACHE_API)
    lifetimes = (
        ("cache_write_5min", presets.parameter["cache_duration_short"].value),
        ("cache_write_1h", presets.parameter["cache_duration_long"].value),
    )
    tiers = list(presets.tier.values())
    hbm = next(t for t in tiers if t.medium == "HBM")
    kink_ctx = presets.parameter["price_kink_context"].value
    even_hbm = ev.q("cache_breakeven_time", tier=hbm.id)
    drain_hbm = Evaluator(presets, tier=hbm.id).q("storage_tier_drain_time")
    identity = (kink_ctx * Q_(1, "sequence/token") * drain_hbm).to("hour")
    # the same cache recomputed at BF16 (the audit's reading: kink at FP8, prefill at BF16)
    bf16 = Evaluator(presets, HARDWARE, precision="bf16", **{**ev.fixed})

    def hours(q):
        if q is None:
            return NEVER
        q = q.to("hour")
        return said(q if q.m >= 1 else q.to("minute"), 3)

    covers = []
    for field, life in lifetimes:
        price = api.get(field)
        covers.append(
            {
                "life": said(life),
                "cells": [
                    said_number(
                        Evaluator(presets, api=CACHE_API, cache_write_price=price)
                        .q(
                            "cache_premium_over_hold",
                            tier=t.id,
                            cache_lifetime=life,
                            kv_bytes_per_token=k,
                        )
                        .to("")
                        .m,
                        3,
                    )
                    for t in tiers
                ],
            }
        )
    return {
        "bytes": said(k.to("kB/token"), 2),
        "llama_bytes": said(llama.q("kv_bytes_per_token").to("kB/token"), 3),
        "llama_over_kink": said_number((llama.q("kv_bytes_per_token") / k).to("").m, 3),
        "rows": [
            {
                "medium": t.medium,
                "llama": hours(_breakeven(llama, tier=t.id)),
                "kink": hours(_breakeven(ev, tier=t.id)),
            }
            for t in tiers
        ],
        "hbm_even": hours(even_hbm),
        "hbm_even_bf16": hours(bf16.q("cache_breakeven_time", tier=hbm.id)),
        "identity": hours(identity),
        "hbm_drain": said(drain_hbm.to("ms"), 3),
        "covers": covers,
        "tiers": [t.medium for t in tiers],
        "per_chip": said_number((hbm.capacity / (k * kink_ctx * Q_(1, "sequence"))).to("").m, 2),
        "kink_count": said_number(kink_ctx.to("token/sequence").m),
        "prompt_cache": said((k * kink_ctx * Q_(1, "sequence")).to("MB"), 2),
    }


def _drain_nearest(presets: Presets) -> dict:
    """The tier whose drain time (capacity over bandwidth) is nearest each cache lifetime, by
    ratio, and how far the neighbours are: the drain-time rule read honestly."""
    tiers = [
        (t.medium, Evaluator(presets, tier=t.id).q("storage_tier_drain_time"))
        for t in presets.tier.values()
    ]
    out = {}
    for key in ("cache_duration_short", "cache_duration_long"):
        life = presets.parameter[key].value
        ranked = sorted(tiers, key=lambda r: abs(math.log((r[1] / life).to("").m)))
        out[key.removeprefix("cache_duration_")] = {
            "life": said(life),
            "tiers": [
                {
                    "medium": medium,
                    "off": said_number(max((t / life).to("").m, (life / t).to("").m), 2),
                }
                for medium, t in ranked[:2]
            ],
        }
    return out


def _kv_mechanics(presets: Presets) -> dict:
    """Two numbers for the paragraph on how servers manage the cache: how many 8,192-token
    Llama 3.1 70B caches one H100 holds at BF16 and at FP8, and one long sequence's cache per
    chip when it is split by KV heads (one head per chip at most)."""
    model = presets.get("model", KV_MODEL)
    hbm = presets.get("hardware", HARDWARE).hbm_capacity
    kink_ctx = presets.parameter["price_kink_context"].value
    per = {
        p: Evaluator(presets, HARDWARE, KV_MODEL, precision=p).q("kv_cache_per_sequence")
        * ONE_SEQUENCE
        for p in ("bf16", "fp8")
    }
    heads = model.get("n_kv_heads")
    long_seq = (
        Evaluator(presets, HARDWARE, KV_MODEL).q("kv_cache_per_sequence", context_length=kink_ctx)
        * ONE_SEQUENCE
    )
    return {
        "bf16_fit": said_number((hbm / per["bf16"]).to("").m, 2),
        "fp8_fit": said_number((hbm / per["fp8"]).to("").m, 2),
        "kv_heads": said_number(heads),
        "long": said(long_seq.to("GB"), 3),
        "per_chip": said((long_seq / heads).to("GB"), 2),
    }


ICL_MODEL = KV_MODEL


def _long_contexts(presets: Presets) -> dict:
    """In-context learning at a hundred million tokens (the lecture's month-long employee): one
    sequence's cache for a Llama-style and a kink-sized model, and the cost per token past the
    kink, which grows in proportion to the context (or as its square root with sparse attention
    that reads a square root of it)."""
    icl = presets.parameter["icl_context_length"].value
    kink_ctx = presets.parameter["price_kink_context"].value
    one = Q_(1, "sequence")
    llama = Evaluator(presets, HARDWARE, ICL_MODEL)
    kink = _kink_evaluator(presets)
    rack = presets.get("hardware", "gb200_nvl72")
    llama_cache = (llama.q("kv_cache_per_sequence", context_length=icl) * one).to("TB")
    kink_cache = (kink.fixed["kv_bytes_per_token"] * icl * one).to("GB")
    rack_hbm = (
        rack.hbm_capacity * rack.get("scale_up_domain") if rack.get("scale_up_domain") else None
    )
    growth = (icl / kink_ctx).to("").m
    # the sparsity that would let a Llama-style cache read only the kink's bytes per token
    sparsity = llama.q("kv_bytes_per_token", precision="fp8") / kink.fixed["kv_bytes_per_token"]
    sparsity = sparsity.to("").m
    return {
        "context": context_tokens(icl),
        "llama": said(llama_cache, 3),
        "kink": said(kink_cache, 3),
        "kink_chips": said_number(
            (kink_cache / presets.get("hardware", HARDWARE).hbm_capacity).to("").m, 2
        ),
        "racks": said_number((llama_cache / rack_hbm).to("").m, 2) if rack_hbm else "—",
        "rack": chip_name(rack),
        "growth": said_number(growth, 3),
        "growth_sqrt": said_number(growth**0.5, 2),
        "dsa": _sparse_attention_reads(presets, icl, kink_ctx),
        "sparsity": said_number(sparsity, 2),
        "attended": context_tokens(kink_ctx / sparsity, 2),
        "attended_icl": context_tokens(icl / sparsity, 2),
    }


def _fast_on_roofline(presets: Presets) -> dict:
    """The batching chapter's roofline solve for Fast mode's speed (same floor: book.chapters)."""
    from book.chapters.batching import fast_mode_on_roofline

    r = fast_mode_on_roofline(presets)
    return {
        "roofline_smaller": said_number(r["smaller"], 2),
        "roofline_cost": said_number(r["cost"], 2),
    }


def _sparse_attention_reads(presets: Presets, icl, kink_ctx) -> dict:
    """DeepSeek Sparse Attention's read per new token, against the lecture's square-root model
    (reader bl18, fault 6): a lightning indexer reads every cached token's small key, then the
    main attention reads a fixed top-k of full MLA entries. Per layer, in cached values (the two
    at the same precision), the read is ``index * L + entry * top_k``: still linear in the
    context L, with the index key's slope instead of the entry's."""
    mdl = presets.get("model", "deepseek_v3")
    entry = mdl.kv_lora_rank + mdl.qk_rope_head_dim  # MLA's cached values per token and layer
    index = presets.parameter["dsa_index_key_values"].value.to("value/token").m
    top_k = presets.parameter["dsa_index_topk"].value.to("token/sequence").m

    def read(tokens: float) -> float:  # values read per layer for one new token
        return index * tokens + entry * min(tokens, top_k)

    long_, short = icl.to("token/sequence").m, kink_ctx.to("token/sequence").m
    return {
        "model": presets.get("api", "deepseek_v3_2").name,  # the model that ships DSA
        "top_k": said_number(top_k),
        "index": said_number(index),
        "entry": said_number(entry),
        "slope": said_number(entry / index, 2),  # how much shallower the indexer's slope is
        "growth": said_number(read(long_) / read(short), 2),  # kink -> 100M tokens
        "over_dense": said_number(entry * long_ / read(long_), 2),  # saving against full MLA
    }


STEP_MODELS = ("llama_3_1_70b", "llama_3_1_405b", "deepseek_v3")  # real models beside the step
FIGURE_END_CONTEXT = 1e6  # tokens: the cost-vs-context figure's longest context


def growth_contexts(presets: Presets, model: str | None = None) -> dict:
    """The three contexts that set how a token's chip time grows with its context on the
    chapter's chip at FP8, weights amortised over a large batch (None where a term is absent):
    ``prefill`` where a causal prefill's attention FLOPs equal the weights' (per input token),
    ``attention`` where decode's do, and ``kv`` where decode's KV read takes as long as the
    weights' FLOPs. ``model=None`` is the kink-sized model: the lecture's frontier active
    parameters, the KV bytes the kink implies, no attention FLOPs (as the kink reading has it).

    >>> from units.presets import load
    >>> round(growth_contexts(load(), "llama_3_1_70b")["kv"])
    1459
    """
    c_fwd = derivations.SYMBOLS["flops_per_param_token"].value
    if model is None:
        ev = _kink_evaluator(presets)
        n_active, kv = ev.fixed["n_active"], ev.fixed["kv_bytes_per_token"]
        prefill = attention = None
    else:
        ev = Evaluator(presets, HARDWARE, model, precision="fp8")
        n_active, kv = presets.get("model", model).params_active, ev.q("kv_bytes_per_token")
        prefill = ev.q("prefill_attention_context").to("token/sequence").m
        attention = ev.q("decode_attention_context").to("token/sequence").m
    ridge = Evaluator(presets, HARDWARE, precision="fp8").q("ridge_intensity")
    return {
        "prefill": prefill,
        "attention": attention,
        "kv": (c_fwd * n_active / (kv * ridge)).to("").m,
    }


def _corner(contexts: dict) -> float | None:
    """The context where decode's KV read overtakes its whole compute, weights' FLOPs and
    attention's: tokens / kv = 1 + tokens / attention; None when attention grows as fast.

    >>> _corner({"kv": 10.0, "attention": None})
    10.0
    >>> round(_corner({"kv": 10.0, "attention": 20.0}), 6)
    20.0
    """
    if contexts["attention"] is None:
        return contexts["kv"]
    slope = 1 / contexts["kv"] - 1 / contexts["attention"]
    return 1 / slope if slope > 0 else None


def cost_growth(contexts: dict, tokens):
    """A token's chip time at ``tokens`` of context over its time with none: (per input token of
    a causal prefill, compute-bound; per output token of decode, the larger of its compute and
    its KV read). ``tokens`` may be a number or a numpy array; prefill is None for the
    kink-sized model, whose attention FLOPs the kink does not reveal.

    >>> cost_growth({"prefill": 100.0, "attention": 50.0, "kv": 10.0}, 100.0)
    (2.0, 10.0)
    """
    prefill = None if contexts["prefill"] is None else 1 + tokens / contexts["prefill"]
    compute = 1 + (0 if contexts["attention"] is None else tokens / contexts["attention"])
    read = tokens / contexts["kv"]
    return prefill, (compute + read + abs(compute - read)) / 2  # the larger, for arrays too


def _two_steps(presets: Presets) -> dict:
    """Which mechanism explains which of Gemini's two price steps: at the kink's context, each
    real model's chip time per input token (prefill attention) and per output token (decode KV
    reads) over its time with no context; the model whose prefill grows most nearly as the input
    price does; and the KV bytes the kink implies if the output step is read as the cost at the
    line rather than the corner."""
    kink_ctx = presets.parameter["price_kink_context"].value.to("token/sequence")
    short, long_ = presets.get("api", "gemini_2_5_pro"), presets.get("api", "gemini_2_5_pro_long")
    in_step = (long_.input / short.input).to("").m
    out_step = (long_.output / short.output).to("").m
    rows = []
    for m in STEP_MODELS:
        g = growth_contexts(presets, m)
        prefill, decode = cost_growth(g, kink_ctx.m)
        rows.append(
            {
                "name": presets.get("model", m).name,
                "prefill": said_number(prefill, 2),
                "decode": said_number(decode, 2),
                "prefill_x": prefill,
                "decode_x": decode,
                "prefill_context": context_tokens(Q_(g["prefill"], "token/sequence"), 2),
                "kv_context": context_tokens(Q_(g["kv"], "token/sequence"), 2),
                # the corner of kv_compute_crossover_context: the read against the weights'
                # and attention's FLOPs (never, when attention outgrows the read)
                "corner": context_tokens(Q_(_corner(g), "token/sequence"), 2)
                if _corner(g)
                else "never",
            }
        )
    closest = min(rows, key=lambda r: abs(math.log(r["prefill_x"] / in_step)))
    frontier = presets.parameter["frontier_active_params"].value
    # the output step read as the cost at the line: the corner sits out_step times earlier
    at_line = Evaluator(presets, HARDWARE, precision="fp8", n_active=frontier).q(
        "kv_bytes_from_price_kink", price_kink_context=kink_ctx / out_step
    )
    # the output column's lowest and highest, as the table prints them
    decode = [r["decode"] for r in sorted(rows, key=lambda r: r["decode_x"])]
    mla_name = presets.get("model", MLA_MODEL).name
    return {
        "rows": rows,
        "closest": closest,
        # the MLA model's own row, which the input-kink text says is not the kink-sized model
        "mla": next(r for r in rows if r["name"] == mla_name),
        # the output column's span, said as the table says it ('38 to 140')
        "decode_span": f"{decode[0].said} to {decode[-1].said}"
        if decode[0].said != decode[-1].said
        else decode[0].said,
        "in_step": said_number(in_step, 2),
        "out_step": said_number(out_step, 2),
        "kink_kv_context": context_tokens(Q_(growth_contexts(presets)["kv"], "token/sequence"), 2),
        "at_line": said(at_line.to("kB/token"), 2),
    }


def _cache_verdict(presets: Presets) -> dict:
    """Which tier each cache lifetime points to, for a Llama-style cache and the kink-sized one:
    the fastest tier on which holding the cache for its whole lifetime costs less than
    recomputing it once. One table (break-even time per tier, each model) and the KV size per
    token below which HBM wins for each lifetime (the break-even time is inversely proportional
    to the KV bytes: the rent is per byte, the recompute is not)."""
    tiers = list(presets.tier.values())  # fastest first
    llama = Evaluator(presets, HARDWARE, KV_MODEL)
    kink = _kink_evaluator(presets)
    k = kink.fixed["kv_bytes_per_token"].to("byte/token")
    even = {
        "llama": [_breakeven(llama, tier=t.id) for t in tiers],
        "kink": [_breakeven(kink, tier=t.id) for t in tiers],
    }
    drains = [Evaluator(presets, tier=t.id).q("storage_tier_drain_time") for t in tiers]

    def time(q):
        return NEVER if q is None else _time_said(q)

    lifetimes = []
    for key in ("cache_duration_short", "cache_duration_long"):
        life = presets.parameter[key].value

        def home(times, life=life):
            return next(
                (
                    t.medium
                    for t, e in zip(tiers, times, strict=True)
                    if e is not None and e >= life
                ),
                "none",
            )

        lifetimes.append(
            {
                "life": said(life),
                "llama": home(even["llama"]),
                "kink": home(even["kink"]),
                # HBM wins for this lifetime below this many KV bytes per token (100B, FP8)
                "hbm_below": said((k * even["kink"][0] / life).to("kB/token"), 2),
                # ... that is, when the decode crossover lies beyond this context
                "hbm_context": _tokens_said(
                    (life / drains[0] * Q_(1, "token/sequence")).to("token/sequence"),
                    context_tokens((life / drains[0] * Q_(1, "token/sequence")), 3),
                ),
            }
        )
    # the DRAM row is one DIMM read at its own bandwidth; a host reads many behind one link to
    # the GPU, which sets the read back. Its ceiling: the break-even with the read back free
    dram = next(t for t in tiers if t.medium == "DRAM")
    on_dram = Evaluator(presets, HARDWARE, KV_MODEL, tier=dram.id)
    free_read = on_dram.q("cache_recompute_cost") / on_dram.q("cache_hold_cost")
    short = presets.parameter["cache_duration_short"].value
    return {
        "dram": {
            "device": dram.name.split(",")[-1].strip(),
            "bandwidth": said(dram.bandwidth),
            "free_read": time(free_read),
            "short_of": free_read < short,  # even a free read back leaves it short of 5 min
            "short": said(short),
        },
        "rows": [
            {
                "medium": t.medium,
                "device": t.name.split(",")[-1].strip(),
                "drain": time(d),
                "llama": time(e_l),
                "kink": time(e_k),
            }
            for t, d, e_l, e_k in zip(tiers, drains, even["llama"], even["kink"], strict=True)
        ],
        "lifetimes": lifetimes,
        "llama_bytes": said(llama.q("kv_bytes_per_token").to("kB/token"), 3),
        "kink_bytes": said(k.to("kB/token"), 2),
        "hbm_kink": time(even["kink"][0]),
        "hbm_llama": time(even["llama"][0]),
        # the same without prefill's attention in the recompute (the identity: corner x drain
        # less one drain); the table's column counts it at the chapter's 8,192-token context
        "hbm_llama_bare": time(
            _breakeven(
                llama,
                tier=tiers[0].id,
                prefill_flops_per_token=derivations.SYMBOLS["flops_per_param_token"].value
                * presets.get("model", KV_MODEL).params_active,
            )
        ),
        # exact for tests, said at 2 figures as the first section's corner table says it
        "llama_corner": _tokens_said(
            Q_(growth_contexts(presets, KV_MODEL)["kv"], "token/sequence")
        ),
        "llama_dram": time(even["llama"][1]),
    }


def _gemini_steps(presets: Presets) -> tuple[float, float]:
    """Gemini's input and output steps at its line: the long tier's price over the short's."""
    short, long_ = presets.get("api", "gemini_2_5_pro"), presets.get("api", "gemini_2_5_pro_long")
    return (long_.input / short.input).to("").m, (long_.output / short.output).to("").m


def _both_steps(presets: Presets) -> dict:
    """Can one model take both of Gemini's steps (reader blo23, fault 1; reader lr26, fault 1)?
    For the lecture's frontier model on the chapter's chip at FP8: the prefill attention FLOPs
    per context token that make the input step (attention equal to the weights' FLOPs at the line
    over the step less one), what the same attention does to decode (a decoded token attends to
    the whole context, a prompt token to half on average), the KV bytes a token must *read* for
    that read to overtake compute at the line (the kink reading with attention counted), and so
    the attention FLOPs per byte read the model needs, against what grouped-query attention and
    an absorbed MLA latent do per byte read. Cross-layer sharing does not change FLOPs per byte
    read: every attending layer re-reads the shared cache, so bytes read are attending layers x
    bytes stored. Last, what prefill's attention adds at the line when a Llama-style cache is cut
    to the kink's bytes by windows or sparsity, which keep the same share of the attention."""
    kink_ctx = presets.parameter["price_kink_context"].value.to("token/sequence")
    in_step, _ = _gemini_steps(presets)
    frontier = presets.parameter["frontier_active_params"].value
    c_fwd = derivations.SYMBOLS["flops_per_param_token"].value
    ev = Evaluator(presets, HARDWARE, precision="fp8", n_active=frontier)
    even = kink_ctx / (in_step - 1)  # where prefill's attention must equal the weights' FLOPs
    attention = (2 * c_fwd * frontier / (even * Q_(1, "sequence/token"))).to("MFLOP/token")
    if (
        abs((ev.q("prefill_attention_context", prefill_attention_flops=attention) / even - 1).m)
        > 1e-9
    ):
        raise ValueError("the attention the input step asks for misses prefill_attention_context")
    decode_even = ev.q("decode_attention_context", attention_flops_per_token=attention)
    decode_at_line = 1 + (kink_ctx / decode_even).to("").m  # decode's compute at the line
    implied = ev.q("kv_bytes_from_price_kink").to("byte/token")
    ridge = Evaluator(presets, HARDWARE, precision="fp8").q("ridge_intensity")
    with_attention = dict(attention_flops_per_token=attention)
    # the KV read overtakes weights' and attention's FLOPs at the line: k = (W/F)(c N/L + a)
    corner_bytes = (implied + attention / ridge).to("byte/token")
    at = ev.q("kv_compute_crossover_context", kv_bytes_per_token=corner_bytes, **with_attention)
    if abs((at / kink_ctx - 1).to("").m) > 1e-9:
        raise ValueError("the corner bytes miss the line")
    needed = (attention / corner_bytes).to("FLOP/byte")  # attention per byte read, both steps
    llama = Evaluator(presets, HARDWARE, KV_MODEL, precision="fp8")
    mla = Evaluator(presets, HARDWARE, MLA_MODEL, precision="fp8")
    # per byte read: each attending layer does its FLOPs on the bytes it reads, shared or not
    gqa_read = (llama.q("gqa_attention_flops") / llama.q("kv_bytes_per_token")).to("FLOP/byte")
    mla_read = (mla.q("mla_decode_attention_flops") / mla.q("kv_bytes_per_token")).to("FLOP/byte")
    if not gqa_read < needed < ridge:
        raise ValueError("grouped-query attention now reaches the both-steps intensity: reword")
    kept = (implied / llama.q("kv_bytes_per_token")).to("").m  # share of cache and attention kept
    shared_read = llama.q("kv_bytes_per_token")  # every layer re-reads one layer's shared cache
    return {
        "attention": said(attention, 2),
        "llama_attention": said(llama.q("gqa_attention_flops").to("MFLOP/token"), 2),
        "decode_at_line": said_number(decode_at_line, 2),
        "ridge": said_number(ridge.to("FLOP/byte").m, 3),
        "corner_bytes": said(corner_bytes.to("kB/token"), 2),
        "corner_over": said_number((corner_bytes / implied).to("").m, 2),
        "needed_per_read": said_number(needed.m, 2),
        "gqa_per_read": said_number(gqa_read.m, 2),
        "mla_per_read": said_number(mla_read.m, 2),
        "mla_model": presets.get("model", MLA_MODEL).name,
        "mla_bytes": said(mla.q("kv_bytes_per_token").to("kB/token"), 2),
        "mla_over": said_number((mla.q("kv_bytes_per_token") / corner_bytes).to("").m, 2),
        "mla_over_kink": said_number((mla.q("kv_bytes_per_token") / implied).to("").m, 2),
        "shared_read": said(shared_read.to("kB/token"), 3),
        "kept_add": said_number(100 * (in_step - 1) * kept, 1) + "%",
        "step_add": said_number(100 * (in_step - 1), 2) + "%",
    }


def breakeven_times(presets: Presets) -> list[dict]:
    """Per tier, fastest first: its hold time (capacity over bandwidth) and how long holding a
    Llama 3.1 70B cache (BF16) and the kink-sized cache (FP8) beats recomputing it (None: never).
    The drain-ladder figure draws these beside the cache lifetimes."""
    llama, kink = Evaluator(presets, HARDWARE, KV_MODEL), _kink_evaluator(presets)
    return [
        {
            "medium": t.medium,
            "device": t.name.split(",")[-1].strip(),
            "hold": Evaluator(presets, tier=t.id).q("storage_tier_drain_time"),
            "llama": _breakeven(llama, tier=t.id),
            "kink": _breakeven(kink, tier=t.id),
        }
        for t in presets.tier.values()
    ]


EXERCISE_KINK_CHIP = ("gb200_nvl72", "fp4")  # the price-list exercise's chip and precision
EXERCISE_HEADS_MODEL = "qwen3_235b_a22b"  # whose KV heads the exercise counts layers of
WALL_MODEL, WALL_CHIP = "qwen3_235b_a22b", "h200"  # the memory-wall exercise
RATIO_API, RATIO_API_PRIORITY = "gpt_5", "gpt_5_priority"  # the output-price exercise


def _exercises(presets: Presets) -> dict:
    """The exercises' inputs, changed from the worked examples' so that the student transfers
    (reader blo23, fault 4): a price step at DeepSeek-V3's 128K on a GB200 at FP4; Qwen3-235B's
    cache at 32K on an H200; GPT-5's output/input ratio, standard and Priority."""
    frontier = presets.parameter["frontier_active_params"].value
    hw, precision = EXERCISE_KINK_CHIP
    ctx = presets.parameter["longer_context_length"].value
    implied = Evaluator(presets, hw, precision=precision, n_active=frontier).q(
        "kv_bytes_from_price_kink", price_kink_context=ctx
    )
    llama8 = Evaluator(presets, HARDWARE, KV_MODEL, precision="fp8").q("kv_bytes_per_token")
    heads = presets.get("model", EXERCISE_HEADS_MODEL)
    layer = Evaluator(presets, HARDWARE, EXERCISE_HEADS_MODEL, precision="fp8").q(
        "kv_bytes_per_token", global_layers=1
    )
    kink = {
        "chip": chip_name(presets.get("hardware", hw)),
        "precision": precision.upper(),
        "context": context_tokens(ctx),  # a preset: 131,072 tokens, whole
        "ridge": said_number(
            Evaluator(presets, hw, precision=precision).q("ridge_intensity").to("FLOP/byte").m, 3
        ),
        "bytes": said(implied.to("kB/token"), 2),
        "llama_over": said_number((llama8 / implied).to("").m, 2),
        "heads_model": heads.name,
        "kv_heads": said_number(heads.get("n_kv_heads")),
        "head_dim": said_number(heads.get("head_dim")),
        "layer": said(layer.to("byte/token")),
        "layers": said_number((implied / layer).to("").m, 2),
        "ridge_over": said_number(
            (
                Evaluator(presets, hw, precision=precision).q("ridge_intensity")
                / Evaluator(presets, HARDWARE, precision="fp8").q("ridge_intensity")
            )
            .to("")
            .m,
            2,
        ),
        "over_200k": said_number((presets.parameter["price_kink_context"].value / ctx).to("").m, 2),
    }
    wall_ctx = presets.parameter["long_context_length"].value
    wall = Evaluator(presets, WALL_CHIP, WALL_MODEL)
    per_token = wall.q("kv_bytes_per_token")
    per_seq = (wall.q("kv_cache_per_sequence", context_length=wall_ctx) * ONE_SEQUENCE).to("GB")
    chip = presets.get("hardware", WALL_CHIP)
    model = presets.get("model", WALL_MODEL)
    corner = _kv_compute_context(Evaluator(presets, WALL_CHIP, WALL_MODEL, precision="fp8"))
    # the same corner with weights, cache and arithmetic all at BF16: half the FLOPs per second
    # against twice the bytes per token, so the chip's bytes per FLOP and the corner are unchanged
    corner_bf16 = _kv_compute_context(Evaluator(presets, WALL_CHIP, WALL_MODEL, precision="bf16"))
    wall_out = {
        "model": model.name,
        "chip": chip_name(chip),
        "context": context_tokens(wall_ctx),  # a preset: 32,768 tokens, whole
        "layers": said_number(model.get("layers")),
        "kv_heads": said_number(model.get("n_kv_heads")),
        "head_dim": said_number(model.get("head_dim")),
        "per_token": said(per_token.to("kB/token"), 3),
        "per_seq": said(per_seq, 2),
        "hbm": said(chip.hbm_capacity),
        "fit": said_number((chip.hbm_capacity / per_seq).to("").m, 2),
        "corner": context_tokens(corner, 2),
        "corner_same_at_bf16": context_tokens(corner, 2) == context_tokens(corner_bf16, 2),
        "corner_bf16": context_tokens(corner_bf16, 2),
        "past": said_number((wall_ctx / corner).to("").m, 2),
    }
    hold = _exercise_hold(presets)
    # the bandwidth exercise's second part: the kink read on the generation before the H100
    # (dense BF16, the one precision both have), for the same frontier model
    old, new = (
        Evaluator(presets, hw_id, precision="bf16", n_active=frontier) for hw_id in GENERATIONS[:2]
    )
    gen = [presets.get("hardware", h) for h in GENERATIONS[:2]]
    older = {
        "old": chip_name(gen[0]),
        "new": chip_name(gen[1]),
        "bandwidth": number((gen[1].hbm_bandwidth / gen[0].hbm_bandwidth).to("").m, 3),
        "flops": number((gen[1].dense_flops_bf16 / gen[0].dense_flops_bf16).to("").m, 3),
        "factor": said_number(
            (new.q("kv_bytes_from_price_kink") / old.q("kv_bytes_from_price_kink")).to("").m, 2
        ),
        "old_bytes": said(old.q("kv_bytes_from_price_kink").to("kB/token"), 2),
        "new_bytes": said(new.q("kv_bytes_from_price_kink").to("kB/token"), 2),
    }
    std, pri = presets.get("api", RATIO_API), presets.get("api", RATIO_API_PRIORITY)
    ratio = {
        "api": std.name,
        "priority": pri.name,
        "ratio": Evaluator(presets, api=RATIO_API).text("decode_prefill_ratio_from_prices"),
        "priority_ratio": Evaluator(presets, api=RATIO_API_PRIORITY).text(
            "decode_prefill_ratio_from_prices"
        ),
        "priority_times": said_number((pri.input / std.input).to("").m, 2),
        "input": quantity(std.input.to("USD/Mtoken")),
        "output": quantity(std.output.to("USD/Mtoken")),
    }
    return {
        "kink": kink,
        "wall": wall_out,
        "ratio": ratio,
        "hold": hold,
        "older": older,
        "shard": _exercise_shard(presets),
        "figure": _exercise_figure(presets),
    }


def _exercise_shard(presets: Presets) -> dict:
    """Sharding one long cache (reader lr29: no exercise used the section on how servers manage
    the cache): Qwen3-235B's cache of one sequence at the kink's context, at BF16, split by KV
    head over at most one chip per head, then by sequence to fill an H200 node's scale-up
    domain; and the same at FP8 (KV quantization)."""
    model = presets.get("model", WALL_MODEL)
    chip = presets.get("hardware", WALL_CHIP)
    ctx = presets.parameter["price_kink_context"].value
    per = {
        p: (
            Evaluator(presets, WALL_CHIP, WALL_MODEL, precision=p).q(
                "kv_cache_per_sequence", context_length=ctx
            )
            * ONE_SEQUENCE
        ).to("GB")
        for p in ("bf16", "fp8")
    }
    heads = model.get("n_kv_heads")
    node = chip.scale_up_domain.to("chip").m
    ways = node / heads  # the sequence split this many ways once every head has its own chip
    if ways != int(ways) or ways < 2:
        raise ValueError("the node is not a whole multiple of the KV heads: reword the exercise")
    return {
        "model": model.name,
        "chip": chip_name(chip),
        "context": context_tokens(ctx),
        "kv_heads": said_number(heads),
        "per_token": said(
            Evaluator(presets, WALL_CHIP, WALL_MODEL).q("kv_bytes_per_token").to("kB/token"), 3
        ),
        "node": said(chip.scale_up_domain),
        "node_chips": said_number(node),
        "seq": said(per["bf16"], 3),
        "per_head_chip": said(per["bf16"] / heads, 2),
        "ways": said_number(ways),
        "per_node_chip": said(per["bf16"] / node, 2),
        "per_node_chip_fp8": said(per["fp8"] / node, 2),
    }


FIGURE_READ_MODEL = "llama_3_1_405b"  # whose decode curve the figure-reading exercise reads
FIGURE_READ_TIMES = 10  # the cost multiple it asks for: a gridline of the figure's log axis


def _exercise_figure(presets: Presets) -> dict:
    """Reading the cost-vs-context figure's right panel (reader lr29): the kink-sized model's
    decoded token at the figure's longest context over its cost with none, against the list's
    step; and the context where a real model's decoded token costs ten times its no-context
    cost (past its corner the cost is the KV read's time over the weights' FLOPs' time, so that
    context is ten times where the read alone equals the weights' FLOPs)."""
    kink_ctx = presets.parameter["price_kink_context"].value.to("token/sequence").m
    end = FIGURE_END_CONTEXT
    _, inferred = cost_growth(growth_contexts(presets), end)
    g = growth_contexts(presets, FIGURE_READ_MODEL)
    times = FIGURE_READ_TIMES
    at = times * g["kv"]  # the read's cost at that context, over the no-context compute
    prefill, decode = cost_growth(g, at)
    if abs(decode / times - 1) > 1e-9:  # compute must still be below the read there
        raise ValueError("the model's compute overtakes its read by then: reword the exercise")
    _, out_step = _gemini_steps(presets)
    return {
        "end": context_tokens(Q_(end, "token/sequence")),
        "inferred": said_number(inferred, 2),
        "over_kink": said_number(end / kink_ctx, 2),
        "out_step": said_number(out_step, 2),
        "model": presets.get("model", FIGURE_READ_MODEL).name,
        "times": said_number(times),
        "at": context_tokens(Q_(at, "token/sequence"), 2),
        "kv": context_tokens(Q_(g["kv"], "token/sequence"), 2),
        "corner": context_tokens(Q_(_corner(g), "token/sequence"), 2),
    }


def _exercise_hold(presets: Presets) -> dict:
    """Hold or recompute on another model and chip (reader lr28: the old exercise replayed the
    verdict's numbers): Qwen3-235B at FP8 on an H200. Its decode's corner without attention
    (c_fwd N_active over k_KV times the chip's FLOPs per byte), the chip's HBM drain time
    (capacity over bandwidth), the identity's break-even (corner times drain, less one drain),
    against the short cache lifetime, and the corner that lifetime would need."""
    model = presets.get("model", WALL_MODEL)
    chip = presets.get("hardware", WALL_CHIP)
    ev = Evaluator(presets, WALL_CHIP, WALL_MODEL, precision="fp8")
    c_fwd = derivations.SYMBOLS["flops_per_param_token"].value
    k = ev.q("kv_bytes_per_token").to("byte/token")
    ridge = ev.q("ridge_intensity")
    corner = (c_fwd * model.params_active / (k * ridge)).to("").m  # tokens of context
    drain = (chip.hbm_capacity / chip.hbm_bandwidth).to("ms")
    even = (corner - 1) * drain
    life = presets.parameter["cache_duration_short"].value
    return {
        "model": model.name,
        "chip": chip_name(chip),
        "active": said(model.params_active.to("Gparameter")),
        "bytes": said(k.to("kB/token"), 2),
        "hbm": said(chip.hbm_capacity),
        "bandwidth": said(chip.hbm_bandwidth),
        "ridge": said_number(ridge.to("FLOP/byte").m, 3),
        "corner": context_tokens(Q_(corner, "token/sequence"), 2),
        "drain": said(drain, 2),
        "even": _time_said(even),
        "life": said(life),
        "fits": bool(even >= life),
        "needed": context_tokens(Q_((life / drain).to("").m, "token/sequence"), 2),
    }
