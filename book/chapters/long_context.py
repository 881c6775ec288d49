"""Chapter F's context: KV bytes and parameters per model, crossovers, prices read backwards,
and the memory-tier ladder.

>>> from units.presets import load
>>> rows = context(load())["models"]["rows"]
>>> rows[0]["name"]
'DeepSeek-V3 / R1'
"""

import math

from book.context import Evaluator, cell_in, header
from book.format import number, quantity
from units import Q_
from units.presets import Presets

HARDWARE = "h100_sxm"
KINK_HARDWARE = ("h100_sxm", "gb200_nvl72")


def context(presets: Presets) -> dict:
    frontier = presets.parameter["frontier_active_params"].value
    kink = [
        {
            "name": presets.get("hardware", hw).name,
            "bytes": Evaluator(presets, hw, precision="fp8", n_active=frontier).text(
                "kv_bytes_from_price_kink"
            ),
        }
        for hw in KINK_HARDWARE
    ]
    return {
        "models": _model_table(presets),
        "crossovers": _crossover_table(presets),
        "hardware": presets.get("hardware", HARDWARE).name,
        "frontier": quantity(frontier.to("Gparameter")),
        "kink_context": quantity(
            presets.parameter["price_kink_context"].value.to("ktoken/sequence")
        ),
        "kink": kink,
        "fp8_bytes": quantity(presets.get("precision", "fp8").bytes_per_value),
        "apis": _api_table(presets),
        "fast": {
            "price": quantity(presets.parameter["fast_price_multiplier"].value),
            "speed": quantity(presets.parameter["fast_speed_multiplier"].value),
            "ratio": Evaluator(presets).text("fast_mode_batch_ratio"),
        },
        "tiers": _tier_table(presets),
        "hold_reading": _hold_reading(presets),
        "hold": {
            t.medium: _readable_time(Evaluator(presets, tier=t.id)) for t in presets.tier.values()
        },
        "context_length": quantity(presets.parameter["context_length"].value),
        "tier_model": presets.get("model", "llama_3_1_70b").name,
        **_kv_cache_and_cache_writes(presets),
    }


def _model_table(presets: Presets) -> dict:
    columns = (
        ("KV at BF16", "kB/token"),
        ("total (architecture)", "Gparameter"),
        ("total (published)", "Gparameter"),
        ("active (architecture)", "Gparameter"),
        ("active (published)", "Gparameter"),
    )
    rows = []
    for m in presets.model.values():
        ev = Evaluator(presets, model=m.id)
        values = (
            lambda ev=ev: ev.q("kv_bytes_per_token"),
            lambda ev=ev: ev.q("params_total"),
            lambda m=m: m.get("params_total"),
            lambda ev=ev: ev.q("params_active"),
            lambda m=m: m.get("params_active"),
        )
        gaps = [
            number(100 * ((ev.q(f) / m.get(f)).to("").magnitude - 1), 2) + "%"
            if m.get(f) is not None
            else "—"
            for f in ("params_total", "params_active")
        ]
        rows.append(
            {
                "name": m.name,
                "attention": m.attention.upper(),
                "cells": [cell_in(u, f) for (_, u), f in zip(columns, values, strict=True)],
                "gaps": " / ".join(gaps),
            }
        )
    return {"headers": [header(n, u) for n, u in columns], "rows": rows}


def _crossover_table(presets: Presets) -> dict:
    columns = (
        ("KV = compute", "ktoken/sequence"),
        ("KV = weights at B*", "ktoken/sequence"),
    )
    rows = []
    for m in presets.model.values():
        ev = Evaluator(presets, HARDWARE, m.id)
        values = (
            lambda ev=ev: ev.q("kv_compute_crossover_context"),
            lambda ev=ev: ev.q("kv_weight_crossover_context", batch_size=ev.q("crossover_batch")),
        )
        rows.append(
            {
                "name": m.name,
                "cells": [cell_in(u, f) for (_, u), f in zip(columns, values, strict=True)],
            }
        )
    return {"headers": [header(n, u) for n, u in columns], "rows": rows}


def _api_table(presets: Presets) -> list[dict]:
    rows = []
    for api in presets.api.values():
        ev = Evaluator(presets, api=api.id)
        rows.append(
            {
                "name": api.name,
                "as_of": api.as_of,
                "input": quantity(api.input.to("USD/Mtoken")),
                "output": quantity(api.output.to("USD/Mtoken")),
                "ratio": ev.text("decode_prefill_ratio_from_prices"),
                "discount": ev.text("cache_discount_from_prices")
                if api.get("cache_read") is not None
                else "—",
            }
        )
    return rows


def _tier_table(presets: Presets) -> dict:
    columns = (
        ("capacity", "GB"),
        ("bandwidth", "GB/s"),
        ("hold time (full drain)", "s"),
        ("hold one sequence's cache", "USD/hour"),
        ("holding beats recomputing for", "minute"),
    )
    rows = []
    for tier in presets.tier.values():
        ev = Evaluator(presets, HARDWARE, "llama_3_1_70b", tier=tier.id)
        values = (
            lambda t=tier: t.capacity,
            lambda t=tier: t.bandwidth,
            lambda ev=ev: ev.q("storage_tier_drain_time"),
            lambda ev=ev: ev.q("cache_hold_cost"),
            lambda ev=ev: ev.q("cache_breakeven_time"),
        )
        rows.append(
            {
                "name": tier.name,
                "medium": tier.medium,
                "cells": [cell_in(u, f) for (_, u), f in zip(columns, values, strict=True)],
            }
        )
    return {"headers": [header(n, u) for n, u in columns], "rows": rows}


def _hold_reading(presets: Presets) -> dict:
    """The tier each cache lifetime points to: the one whose break-even time is nearest to it.

    Holding a cache on a tier beats recomputing it for the tier's break-even time, so a lifetime
    belongs to the tier whose break-even time is closest to it (by ratio). The tier's hold time
    (capacity over bandwidth) is given alongside.
    """
    rows = []
    for tier in presets.tier.values():
        ev = Evaluator(presets, HARDWARE, "llama_3_1_70b", tier=tier.id)
        rows.append((tier, ev.q("storage_tier_drain_time"), ev.q("cache_breakeven_time")))
    out = {}
    for key in ("cache_duration_short", "cache_duration_long"):
        life = presets.parameter[key].value
        tier, hold, even = min(rows, key=lambda r: abs(math.log((r[2] / life).to("").m)))
        out[key.removeprefix("cache_duration_")] = {
            "life": quantity(life),
            "medium": tier.medium,
            "breakeven": quantity(even.to("minute")),
            "hold": quantity(hold.to("minute")),
        }
    return out


def _readable_time(ev: Evaluator) -> str:
    """A tier's hold time in minutes up to two hours, in hours beyond."""
    t = ev.q("storage_tier_drain_time").to("minute")
    return quantity(t if t.magnitude < 120 else t.to("hour"))


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
                "lifetime": quantity(life),
                "write": quantity(price.to("USD/Mtoken")),
                "premium": cache.text("cache_write_premium"),
                "cells": [
                    cell_in(
                        "",
                        lambda t=t, c=cache, life=life: c.q(
                            "cache_premium_over_hold", tier=t.id, cache_lifetime=life
                        ),
                    )
                    for t in presets.tier.values()
                ],
            }
        )
    return {
        "kv_cache": {
            "model": presets.get("model", KV_MODEL).name,
            "per_sequence": ev.text("kv_cache_per_sequence"),
            "batch": quantity(batch),
            "per_batch": ev.text("kv_cache_per_batch", batch_size=batch),
            "hbm": quantity(presets.get("hardware", HARDWARE).hbm_capacity),
        },
        "cache_write": {
            "api": api.name,
            "input": quantity(api.input.to("USD/Mtoken")),
            "tiers": [t.name for t in presets.tier.values()],
            "rows": rows,
        },
    }
