"""Choose the server, the precision and the batch that meet a per-user speed most cheaply."""

from __future__ import annotations

import math
from functools import partial

from book.format import number
from book.problem_bank import (
    Draw,
    Mistake,
    PresetsMemo,
    distinct_mistakes,
    evaluate,
    money,
    require,
)
from book.problem_bank._rents import rent
from book.problem_bank.batching._figures import (
    attention_cost,
    cache_derived,
    cache_given,
    usable_share,
)
from units import Q_

KIND = "design"
TITLE = "Which server, which precision, which batch?"
USES = ("memory_time", "compute_time", "step_time", "cost_per_token")

# dense models a server of eight of these chips holds (the 405B in FP8 at least): the 70B is one
# in three, so a page does not build the 70B's cache in most of its problems (reader 26); a
# draw whose options leave fewer than two servers is drawn again
MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
# tokens/s each user must see, fast enough that reading the weights takes a real share of the
# step: past the speed target's batch each token pays for its own cache read whatever the
# batch, so only the weights' share, W/(T - W), separates a speed-bound batch from a full HBM
# (reader 29: at 50 tokens/s the 8B's weights took 1% of the step, and filling the HBM
# regardless of the speed landed inside the window)
RATES = {
    "llama_3_1_8b": (300, 400, 500),
    "llama_3_1_70b": (80, 100, 120),
    "llama_3_1_405b": (40, 50, 60),
}
CONTEXT = 8192
CLOSE = 0.05


# every option worked out on the last presets object drawn on, by its arguments: a seed's
# options and slips come from a few chips, models and speed targets
_OPTIONS = PresetsMemo()


def option(
    hardware, precision, rent, step_limit, presets, kv_scale=1.0, capped=True, paced=True, model=""
):
    """:func:`_option`, worked out once per presets object and arguments (a refusal too)."""
    key = (hardware, precision, rent.m, rent._units, type(step_limit.m), step_limit.m)
    key += (step_limit._units, kv_scale, capped, paced, model)  # pint's units: hashable
    work = (hardware, precision, rent, step_limit, presets, kv_scale, capped, paced, model)
    found = _OPTIONS(presets, key, partial(_option, *work))
    return found and dict(found, limits=dict(found["limits"]))


def _option(
    hardware, precision, rent, step_limit, presets, kv_scale=1.0, capped=True, paced=True, model=""
):
    """The largest batch meeting the step limit and the HBM an engine fills, and its cost per
    token; a slip's: the cache's bytes times ``kv_scale``, the HBM's cap left out if not
    ``capped``, the speed target's if not ``paced``."""
    n = Q_(8, "chip")
    case = dict(
        hardware=hardware,
        model=model,
        precision=precision,
        n_chips=n,
        context_length=Q_(CONTEXT, "token/sequence"),
        price_per_chip_hour=rent,
        presets=presets,
    )
    one = Q_(1, "sequence")
    if kv_scale != 1.0:
        kv = evaluate("kv_bytes_per_token", **case)
        case["kv_bytes_per_token"] = kv * kv_scale
    weights = evaluate("weight_fetch_time", **case, batch_size=one)
    kv_one = evaluate("kv_fetch_time", **case, batch_size=one)
    compute_one = evaluate("compute_time", **case, batch_size=one)
    drained = evaluate("hbm_drain_time", detailed=True, **case).inputs
    fetch = evaluate("weight_fetch_time", detailed=True, **case, batch_size=one).inputs
    weight_bytes = (
        fetch["n_total"].value * fetch["weight_bytes_per_value"].value * Q_(1, "value/parameter")
    ).to("GB")
    hbm = (usable_share(presets)[0] * n * drained["hbm_capacity"].value).to("GB")
    kv_bytes = (
        evaluate("kv_fetch_time", detailed=True, **case, batch_size=one)
        .inputs["kv_bytes_per_token"]
        .value
        * case["context_length"]
    ).to("GB/sequence")
    limits = {
        "speed": math.floor(((step_limit - weights) / kv_one).to("").magnitude),
        "compute": math.floor((step_limit / compute_one).to("").magnitude),
        "memory": math.floor(((hbm - weight_bytes) / kv_bytes).to("sequence").magnitude),
    }
    if not capped:
        del limits["memory"]
    if not paced:  # the step is whatever the full HBM's batch takes: the speed's limits go
        del limits["speed"], limits["compute"]
    batch = min(limits.values())
    if batch < 1:
        return None
    if paced:
        require(limits["compute"] > batch, "the multiplies, attention's too, never set the batch")
    b = Q_(batch, "sequence")
    return dict(
        hardware=hardware,
        precision=precision,
        rent=rent,
        batch=batch,
        limits=limits,
        weight_bytes=weight_bytes,
        weights=weights.to("ms"),
        kv_bytes=kv_bytes,
        kv_one=kv_one.to("us"),
        hbm=hbm,
        binds=min(limits, key=limits.get),
        step=evaluate("step_time", **case, batch_size=b).to("ms"),
        # each sequence's own cache read, paid per token whatever the batch
        floor=(n * rent * kv_one / Q_(1, "token")).to("USD/Mtoken"),
        cost=evaluate("cost_per_token", **case, batch_size=b).to("USD/Mtoken"),
    )


def draw(rng, presets) -> Draw:
    chips = rng.sample(CHIPS, 2)
    rents = {h: rent(h) for h in chips}
    llama = rng.choice(MODELS)
    rate = Q_(rng.choice(RATES[llama]), "token/s/sequence")
    step_limit = (Q_(1, "token/sequence") / rate).to("ms")
    rows = [
        option(h, p, rents[h], step_limit, presets, model=llama)
        for h in chips
        for p in ("bf16", "fp8")
    ]
    rows = sorted((r for r in rows if r), key=lambda r: r["cost"].m)
    require(len(rows) >= 2, "two servers or more hold the model")
    best, second = rows[0], rows[1]
    margin = (second["cost"] / best["cost"]).to("").m - 1
    name = {h: presets.get("hardware", h).name for h in chips}
    model = presets.get("model", llama).name
    why = {"speed": "the speed target", "compute": "the multiplies", "memory": "the HBM"}

    def row(r) -> str:
        return (
            f"{name[r['hardware']]} in {r['precision'].upper()}: batch {number(r['batch'])} "
            f"(set by {why[r['binds']]}), step {money(r['step'], 3)}, "
            f"{money(r['cost'], 3)}"
        )

    def working(r) -> str:
        """The batch and cost of one option, worked."""
        lim = r["limits"]
        return (
            f"{name[r['hardware']]} in {r['precision'].upper()}: the weights, "
            f"{money(r['weight_bytes'], 3)}, take {money(r['weights'], 3)} to read over "
            f"the eight chips; each sequence's KV cache, {money(r['kv_bytes'], 3)}, takes "
            f"{money(r['kv_one'], 3)}; the rest of the step holds "
            f"{number(lim['speed'])} sequences. The HBM an engine fills, "
            f"{money(r['hbm'], 4)}, holds "
            f"{number(lim['memory'])} caches beside the weights; the multiplies, two FLOPs per "
            "parameter plus attention's over the context, would fill the step only at "
            f"{number(lim['compute'])}. So the batch is "
            f"{number(r['batch'])} (set "
            f"by {why[r['binds']]}), the step {money(r['step'], 3)}, and the cost eight "
            f"chips × {money(r['rent'])} × {money(r['step'], 3)} over "
            f"{number(r['batch'])} tokens: {money(r['cost'], 3)}"
        )

    def chip_words(h) -> str:
        c = presets.get("hardware", h)
        return (
            f"servers of eight {name[h]} at {money(rents[h])} ({money(c.hbm_capacity, 3)} "
            f"of HBM at {money(c.hbm_bandwidth, 3)} per chip, "
            f"{money(c.dense_flops_bf16, 4)} dense in BF16 and "
            f"{money(c.dense_flops_fp8, 4)} in FP8)"
        )

    offers = " and ".join(chip_words(h) for h in chips)
    spec = presets.get("model", llama)
    kv16 = evaluate(
        "kv_bytes_per_token",
        detailed=True,
        model=llama,
        precision="bf16",
        presets=presets,
    )
    per_value, kv16 = kv16.inputs["kv_bytes_per_value"].value, kv16.value.to("kB/token")
    text = (
        f"You must serve {model} ({money(spec.params_total)}, dense; "
        f"{cache_given(llama, presets, kv16)}) so that every user sees at least "
        f"{number(rate.magnitude)} "
        f"tokens per second, with contexts of {number(CONTEXT)} tokens ("
        f"{attention_cost(llama, presets)}). You are offered {offers}; "
        f"{usable_share(presets)[1]}. "
        "You may run weights, KV cache and math in BF16 or in FP8, and choose the batch. Which "
        "server and precision give the lowest cost per token, and what is that cost, in USD "
        "per million tokens?"
    )
    close = (
        f" That is close: under {CLOSE:.0%} apart, so a rent quoted slightly differently "
        "would flip the choice."
        if margin < CLOSE
        else ""
    )
    # the speed target binds the winner's batch, and filling the HBM regardless of it lands
    # clear of the window, named (reader 29)
    require(best["binds"] == "speed", "the speed target sets the winner's batch")
    unpaced = min(
        (
            r
            for r in (
                option(h, p, rents[h], step_limit, presets, model=llama, paced=False)
                for h in chips
                for p in ("bf16", "fp8")
            )
            if r
        ),
        key=lambda r: r["cost"].m,
    )
    share = (best["cost"] / best["floor"]).to("").m - 1

    def per_petabyte(h) -> str:
        """The rent of reading a petabyte on chip ``h``: what a token's cache read costs."""
        c = presets.get("hardware", h)
        return f"{money((rents[h] / c.hbm_bandwidth * Q_(1, 'PB/chip')).to('USD'), 3)}"

    lesson = (
        "Where the cost comes from: a token pays for its own sequence's cache read whatever "
        "the batch (eight chips' rent over the cache's read time, "
        f"{money(best['floor'], 3)} on the winner), plus a share of the weights' read, which "
        "the batch divides: at the batch the speed target allows, the weights add "
        f"{share:.0%} to the caches' cost. Filling the HBM would shrink that share (the "
        f"cheapest option would cost {money(unpaced['cost'], 3)}), but a step then reads all "
        f"an engine fills, {money(unpaced['step'], 3)}, too slow for the users. No batch gets "
        "under the caches' floor, so between the servers what counts is the rent of a byte "
        "read (a petabyte: "
        + ", ".join(f"{per_petabyte(h)} on {name[h]}" for h in chips)
        + "), and FP8 halves the bytes."
    )
    solution = (
        "A token of context caches "
        f"{cache_derived(llama, presets, kv16, per_value)} in BF16, half "
        "that in FP8. "
        "For each option, the step may last one over the per-user speed "
        f"({money(step_limit, 3)}). The batch is the largest that keeps the step within it "
        "(weights read once, plus each sequence's KV cache) and whose KV caches fit in the "
        "HBM beside the weights; FP8 halves both the bytes read and the bytes held.",
        f"Cheapest: {working(best)}.",
        f"Runner-up: {working(second)}. It costs {margin:.0%} more.{close}",
        *(f"{row(r)}." for r in rows[2:]),
        lesson,
        f"Lowest cost: **{money(best['cost'], 3)}**, on {name[best['hardware']]} in "
        f"{best['precision'].upper()} at batch {number(best['batch'])}.",
    )

    def cheapest(**slip):
        """The lowest cost a student finds with one slip, every option recomputed (reader 20)."""
        found = [
            option(h, p, rents[h], step_limit, presets, model=llama, **slip)
            for h in chips
            for p in ("bf16", "fp8")
        ]
        return min(r["cost"] for r in found if r)

    slips = [
        (
            r["cost"],
            f"That is {name[r['hardware']]} in {r['precision'].upper()}, "
            "not the cheapest option that meets the speed.",
        )
        for r in rows[1:]
    ]
    slips += [
        (
            unpaced["cost"],
            "You left out the speed target and filled the HBM: that batch's step takes "
            f"{money(unpaced['step'], 3)}, longer than the {money(step_limit, 3)} a user's "
            "speed allows.",
        ),
        (
            cheapest(kv_scale=0.5),
            "You cached one vector per KV head; each caches a key and a value, two vectors.",
        ),
        (
            cheapest(capped=False),
            "You left out the HBM's cap: the batch's caches must fit beside the weights in "
            "what an engine fills.",
        ),
    ]
    for value, _ in slips:  # inside the window or twice its width away, never just outside
        off = abs((value / best["cost"]).to("").m - 1)
        require(off <= 0.03 or off >= 0.06, "each slip lands clear")
    require(abs((unpaced["cost"] / best["cost"]).to("").m - 1) >= 0.06, "the speed matters")
    mistakes = distinct_mistakes([Mistake(v, w) for v, w in slips], best["cost"], 0.03)
    return Draw(
        text=text,
        answer=best["cost"],
        solution=solution,
        tolerance=0.03,
        mistakes=mistakes
        or (
            Mistake(
                best["cost"] * 8,
                "That is the whole server's rent "
                "per token of one sequence's share; divide by the chips.",
            ),
        ),
        hint="For each option, find the batch the speed target and the HBM allow; the cost per "
        "token is the server's rent for one step over that batch.",
        choices={
            "hardware": best["hardware"],
            "precision": best["precision"],
            "batch_size": best["batch"],
        },
        margin=margin,
    )
