"""Hold an idle conversation's KV cache on a memory tier, or drop it and recompute on return."""

from __future__ import annotations

import math

from book.format import context_tokens, number, quantity, said_number
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    evaluate,
    lands_clear,
    money,
    require,
)
from book.problem_bank.batching._figures import attention_cost
from derivations import get
from units import Q_

KIND = "design"
TITLE = "Where to park an idle conversation's cache"
USES = (
    "kv_bytes_per_token",
    "kv_cache_per_sequence",
    "cache_hold_cost",
    "cache_readback_cost",
    "prefill_flops_per_token",
    "cache_recompute_cost",
    "cache_breakeven_time",
    "storage_tier_drain_time",
)
LECTURE = "1:47:30"

HARDWARE = "h100_sxm"  # the HBM tier preset is an H100's
# model, GPUs (BF16): every replica holds its weights with room to spare for caches (checked in
# the draw); the 405B's 812 GB needs two servers of eight 80 GB GPUs
SETUPS = (("llama_3_1_8b", 1), ("llama_3_1_70b", 4), ("llama_3_1_405b", 16))
ROOM = 0.2  # the weights leave at least this share of the HBM for caches
RENTALS = ("lecture_gpu", "h100_gcp")
CONTEXTS = (8192, 32_768)
IDLE = ((30, "s"), (2, "minute"), (5, "minute"), (10, "minute"), (30, "minute"), (1, "hour"))
# from the user's return to the cache: a turn's own prefill takes longer than tens of ms, so
# no promise is tighter than half a second, and three choices or more keep it on every draw
PROMISES = ((500, "ms"), (1, "s"), (2, "s"))
FEASIBLE = 3
ONE = Q_(1, "sequence")
CLOSE = 1.05  # a runner-up within 5% of the best is called close
TRIES = 8  # scenarios drawn, at most, to find one whose choice is not close
TOLERANCE = 0.03  # every price, size and speed is given; the answer is shown to three figures


def _time(t):
    t = t.to("s")
    if t < Q_(1, "s"):
        return money(t.to("ms"), 3)
    if t < Q_(2, "minute"):
        return money(t, 3)
    return money(t.to("minute"), 3) if t < Q_(2, "hour") else money(t.to("hour"), 3)


def _cost(q) -> str:
    """A cost per million tokens without its "per million tokens" (the sentence says it once):
    "6.83¢", "1.64 USD"; a cost under a hundredth of a cent as a sentence says it, "0.0054¢".

    >>> usd = Q_(1, "USD/Mtoken")
    >>> _cost(0.0683 * usd), _cost(1.64 * usd), _cost(5.43e-5 * usd)
    ('6.83¢', '1.64 USD', '0.0054¢')
    """
    if q < Q_(1e-4, "USD/Mtoken"):
        return f"{said_number(q.to('USD/Mtoken').m * 100, 2).said}¢"
    return money(q, 3).removesuffix(" per million tokens")


def _dearer(ratio: float) -> str:
    """How much dearer the runner-up is, as a person says it: '6.9% dearer', '2.1 times'."""
    if ratio < 1.5:
        return f"{number(100 * (ratio - 1), 2)}% dearer"
    return f"{number(ratio, 2)} times dearer"


def _capital(word: str) -> str:
    return word[:1].upper() + word[1:]


def _margin(options, best, promise) -> float:
    """How far ``best`` is ahead (Draw.margin): the next feasible option costs this much more,
    or a cheaper one misses the promise by this much, whichever is less."""
    leads = []
    for o in options:
        if o is best:
            continue
        if o[2] <= promise:
            leads.append((o[1] / best[1]).to("").m - 1)
        elif o[1] < best[1]:
            leads.append((o[2] / promise).to("").m - 1)
    return min(leads, default=float("inf"))


def draw(rng, presets) -> Draw:
    for _ in range(TRIES):  # redraw a near tie: a clear choice teaches more
        drawn = _draw(rng, presets)
        if drawn.margin >= CLOSE - 1:
            break
    return drawn


def _drain_reading(options, drains, idle, best, promise, recompute_cost) -> str:
    """The lecture's drain-time rule (a tier suits holds near its capacity over bandwidth) set
    beside the costed choice: whether it agrees, and if not, why."""
    medium, drain = min(drains, key=lambda d: abs(math.log((d[1] / idle).to("").m)))
    rule = (
        "The lecture's drain-time rule reads the tiers by capacity over bandwidth alone: "
        + ", ".join(f"{m} {_time(t)}" for m, t in drains)
        + f". The one nearest the idle {money(idle)} is {medium}"
    )
    if medium == best[0]:
        return rule + ", the same choice."
    option = next(o for o in options if o[0] == medium)
    if option[2] > promise:
        return rule + f", but its read back, {_time(option[2])}, misses the promise."
    if option[4] >= recompute_cost:
        return (
            rule + f", but reading the cache back from {medium} alone costs "
            f"{money(option[4], 3)}, more than recomputing it: the rule weighs how fast a tier "
            "drains, not what the read back costs against a recompute."
        )
    return (
        rule + f", but holding there costs {money(option[1], 3)} in all: the rule weighs how "
        "fast a tier drains, not its rent against the other tiers'."
    )


def _draw(rng, presets) -> Draw:
    name, chips = rng.choice(SETUPS)
    rental = rng.choice(RENTALS)
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    idle = Q_(*rng.choice(IDLE))
    promise = Q_(*rng.choice(PROMISES))
    model = presets.get("model", name)
    chip = presets.get("hardware", HARDWARE)
    n = Q_(chips, "chip")
    case = dict(hardware=HARDWARE, model=name, price=rental, context_length=context)
    case["presets"] = presets
    tokens = (context * ONE).to("token")
    gpus = f"one {chip.name} GPU" if chips == 1 else f"{number(chips)} {chip.name} GPUs"
    owner = "the GPU's" if chips == 1 else "the GPUs'"
    # one GPU keeps the whole cache and runs the whole prefill; several split both
    keeping = (
        "the GPU keeping it on a device of its own"
        if chips == 1
        else "each GPU keeping its share on a device of its own"
    )
    rerun = "on the GPU at its dense peak" if chips == 1 else "on the GPUs at their dense peak"

    per_token = get("kv_bytes_per_token").evaluate(model=name, presets=presets).to("kB/token")
    cache = (get("kv_cache_per_sequence").evaluate(**case) * ONE).to("GB")
    recompute = get("cache_recompute_cost").evaluate_detailed(**case)
    rent = recompute.inputs["price_per_chip_hour"].value
    flops = recompute.inputs["flops"].value
    per_prefill_token = recompute.inputs["prefill_flops_per_token"].value.to("GFLOP/token")
    weights_only = (
        recompute.inputs["flops_per_param_token"].value * recompute.inputs["n_active"].value
    ).to("GFLOP/token")
    rebuild = (tokens * per_prefill_token / (n * flops)).to("s")
    recompute_cost = (recompute.value * ONE / tokens).to("USD/Mtoken")

    # (name, cost, time to have the cache back, holding cost, read-back cost); costs per
    # million tokens of the conversation
    options, rows, drains, evens = [], [], [], {}
    for tier in presets.tier.values():
        tier_case = dict(case, tier=tier.id)
        held = get("cache_hold_cost").evaluate(**tier_case)
        holding = (held * ONE * idle / tokens).to("USD/Mtoken")
        read = (get("cache_readback_cost").evaluate(**tier_case) * ONE / tokens).to("USD/Mtoken")
        back = (cache / (n * tier.bandwidth)).to("s")  # each GPU reads its share
        options.append((tier.medium, holding + read, back, holding, read))
        drains.append((tier.medium, evaluate("storage_tier_drain_time", **tier_case)))
        if read < recompute_cost:  # else the break-even time is "never"
            evens[tier.medium] = evaluate("cache_breakeven_time", **tier_case)
        shown = tier.get("price", None)
        rows.append(
            f"- {tier.medium}: "
            + (
                f"{money(shown)}, a {money(tier.capacity)} device,"
                if shown is not None
                else f"the GPU's rent for its {money(chip.hbm_capacity)},"
            )
            + f" read at {money(tier.bandwidth)}"
        )
    options.append(("recompute", recompute_cost, rebuild, None, None))

    weights = (model.params_total * Q_(2, "byte/parameter")).to("GB")  # BF16
    hbm = (n * chip.hbm_capacity / Q_(1, "chip")).to("GB")
    require(
        weights + cache <= (1 - ROOM) * hbm,
        "the GPUs hold the weights and this cache, with room for others'",
    )
    feasible = sorted((o for o in options if o[2] <= promise), key=lambda o: o[1].m)
    require(len(feasible) >= FEASIBLE, "several choices keep the promise")
    best, runner = feasible[0], feasible[1] if len(feasible) > 1 else None
    margin = _margin(options, best, promise)
    cheapest = min(options, key=lambda o: o[1].m)

    month = (
        f"\n\nA month is a twelfth of a year, {number(Q_(1, 'month').to('hour').m, 4)} hours."
        if any("month" in row for row in rows)
        else ""
    )
    text = (
        f"You serve {model.name} ({quantity(model.params_active, 4)}) in BF16 on {gpus} "
        f"(rented at {money(rent)}, {money(flops)} dense in BF16 per GPU). Its attention has "
        f"{number(model.layers)} layers, each with {number(model.n_kv_heads)} KV heads of "
        f"{number(model.head_dim)} values, and {number(model.n_heads)} query heads; "
        f"{attention_cost(name, presets)}. A user's "
        f"conversation has reached {context_tokens(context, 6)}, and the user goes quiet; you "
        f"expect them back in {money(idle)}, and you promise that within {money(promise)} "
        "of their return the cache will be ready. You may keep the KV cache on one of these "
        f"tiers, {keeping} (each line gives what the tier charges to hold a byte, and one "
        f"device's size and read speed), or drop it and run the prefill again {rerun}, "
        "causal attention's FLOPs included:\n\n"
        + "\n".join(rows)
        + month
        + f"\n\n{'The GPU waits' if chips == 1 else 'The GPUs wait'}, rented, while the cache "
        "streams back. Which choice keeps the "
        "promise most cheaply, counting the holding and the read back (or the recompute), and "
        "what does it cost per million tokens of the conversation?"
    )
    lines = "; ".join(
        f"{o[0]} {_cost(o[3])} to hold + {_cost(o[4])} to read back = {_cost(o[1])}, back in "
        f"{_time(o[2])}"
        for o in options[:-1]
    )
    solution = [
        f"The cache is {money(per_token)} (a key and a value for each of "
        f"{number(model.n_kv_heads)} KV heads of {number(model.head_dim)} values in "
        f"{number(model.layers)} layers, two bytes each), so {money(cache, 3)} for the "
        f"{context_tokens(context, 6)}.",
        f"A tier costs its price per byte-hour times {money(cache, 3)} times {money(idle)}, "
        f"plus the read back: {owner} rent while "
        f"{money(cache, 3)} streams in, "
        + (
            "from its own device"
            if chips == 1
            else "each GPU reading its share from its own device"
        )
        + ". Per "
        "million tokens of conversation, and the time to have it back: "
        f"{lines}.",
        f"Recomputing it is a prefill of {context_tokens(context, 6)}: "
        f"{money(weights_only)} for the weights plus causal attention over half the "
        f"context on average, {money(per_prefill_token)} in all. On {gpus} that takes "
        f"{_time(rebuild)} of rented GPU time: {money(recompute_cost, 3)}.",
    ]
    late = [o for o in options if o[2] > promise]
    if late:
        solution.append(
            "Too slow for the promise: "
            + ", ".join(f"{o[0]} ({_time(o[2])})" for o in late)
            + f", against {money(promise)}."
        )
    if best[0] in evens:
        even = evens[best[0]]
        solution.append(
            f"Holding on {best[0]} beats recomputing for up to {_time(even)} (the recompute "
            "less the read back, over the holding's cost per hour), "
            + (
                f"longer than the {money(idle)} it waits."
                if even >= idle
                else f"shorter than the {money(idle)} it waits: a recompute would cost less, "
                "but it is not back in time."
            )
        )
    verdict = (
        f"The cheapest choice that keeps the promise is {best[0]}"
        if best[0] != "recompute"
        else "The cheapest choice that keeps the promise is to recompute"
    )
    if runner is not None:
        dearer = (runner[1] / best[1]).to("").m
        verdict += f", ahead of {runner[0]} at {money(runner[1], 3)}" + (
            f": close, only {number(100 * (dearer - 1), 2)}% apart, so either is a fair choice"
            if dearer < CLOSE
            else f" ({_dearer(dearer)})"
        )
    if margin < CLOSE - 1 and (runner is None or dearer >= CLOSE):
        verdict += (
            f"; close, though: {cheapest[0]} is cheaper and misses the promise by only "
            f"{number(100 * margin, 2)}%"
        )
    solution.append(_drain_reading(options, drains, idle, best, promise, recompute_cost))
    solution.append(f"{verdict}: **{money(best[1], 3)}**.")

    # every other choice is named with its own reason (reader 24 P5: the lecture's "an hour's
    # wait: disk" landed on disk and got no diagnosis); the cheapest first, then the runner-up
    def verdict_on(o) -> str:
        if o[2] > promise:
            took = (
                f"recomputing the cache takes {_time(o[2])}"
                if o[0] == "recompute"
                else f"reading {money(cache, 3)} back takes {_time(o[2])}"
            )
            rule = (
                " (the lecture's rule of thumb, an hour's wait on disk, ignores the read-back "
                "speed)"
                if o[0] == "disk" and idle >= Q_(30, "minute")
                else ""
            )
            return (
                f"{_capital(o[0])} costs {money(o[1], 3)} but breaks the {money(promise)} "
                f"promise: {took}{rule}."
            )
        return (
            f"{_capital(o[0])} keeps the promise but costs more: {money(o[1], 3)}, against "
            f"{money(best[1], 3)} for {best[0]}."
        )

    others = sorted((o for o in options if o is not best), key=lambda o: o[1].m)
    others.sort(key=lambda o: (o is not cheapest, o is not runner))  # stable: then by cost
    candidates = [(o[1], verdict_on(o)) for o in others]

    def chosen(slipped) -> Q_:
        """The cheapest option that keeps the promise, as a student with one slip finds it."""
        return min((o for o in slipped if o[2] <= promise), key=lambda o: o[1].m)[1]

    # each slip reruns the whole choice (reader 20): half the cache halves a tier's holding,
    # read back and its time (a tier may then keep the promise); the holding alone drops the
    # read back's cost
    halved = [
        o if o[0] == "recompute" else (o[0], o[1] / 2, o[2] / 2, o[3] / 2, o[4] / 2)
        for o in options
    ]
    unread = [o if o[0] == "recompute" else (o[0], o[3], o[2], o[3], o[4]) for o in options]
    candidates.append(
        (chosen(halved), "You counted one vector per KV head; each caches a key and a value.")
    )
    candidates.append(
        (
            chosen(unread),
            "You counted the holding alone: the GPUs also wait, rented, while the cache "
            "streams back.",
        )
    )
    if best[0] == "recompute":
        candidates.append(
            (
                recompute_cost * (weights_only / per_prefill_token).to(""),
                "You left attention out of the prefill; over a long context it adds FLOPs for "
                "every token.",
            )
        )
        trained = get("training_flops").evaluate(
            model=name, training_tokens=Q_(1, "token"), presets=presets
        ) / Q_(1, "token")  # a forward and a backward pass per token, weights only
        slip = (per_prefill_token - weights_only + trained) / per_prefill_token
        candidates.append(
            (
                recompute_cost * slip.to(""),
                "You counted a forward and a backward pass; a prefill is a forward pass only.",
            )
        )
        if chips > 1:
            candidates.append(
                (
                    recompute_cost / chips,
                    f"You paid for one GPU's time; the prefill runs on all {number(chips)} GPUs of "
                    "the replica, each rented.",
                )
            )
    # a slip lands inside the window or twice its width away (named), never between: redraw
    # (reader 20); of two on one value the first listed is named
    for value, _ in candidates:
        require(lands_clear(value, best[1], TOLERANCE), "each slip lands clear")
    mistakes = distinct_mistakes([Mistake(v, w) for v, w in candidates], best[1], TOLERANCE)
    return Draw(
        hint=(
            "For each tier, check the read-back time against the promise first; only then "
            "compare what holding and reading back (or recomputing) cost."
        ),
        text=text,
        answer=best[1],
        solution=tuple(solution),
        tolerance=TOLERANCE,
        mistakes=mistakes,
        choices={"where": best[0]},
        margin=margin,
    )
