"""Hold an idle conversation's KV cache on a memory tier, or drop it and recompute on return."""

from __future__ import annotations

from book.format import context_tokens, number
from book.problem_bank import Draw, Mistake, money
from derivations import get
from units import Q_

KIND = "design"
TITLE = "Where to park an idle conversation's cache"
USES = (
    "kv_bytes_per_token",
    "kv_cache_per_sequence",
    "cache_hold_cost",
    "cache_recompute_cost",
    "prefill_flops_per_token",
)
LECTURE = "1:33:02"

HARDWARE = "h100_sxm"  # the HBM tier preset is an H100's
SETUPS = (("llama_3_1_8b", 1), ("llama_3_1_70b", 4))  # model, chips of a replica (BF16)
RENTALS = ("lecture_gpu", "h100_gcp")
CONTEXTS = (8192, 32_768)
IDLE = ((30, "s"), (2, "minute"), (10, "minute"), (1, "hour"), (3, "hour"), (8, "hour"))
PROMISES = (1, 3, 10)  # seconds from the user's return to the cache being ready
ONE = Q_(1, "sequence")
CLOSE = 1.05  # a runner-up within 5% of the best is called close
TRIES = 8  # scenarios drawn, at most, to find one whose choice is not close


def _time(t):
    t = t.to("s")
    if t < Q_(1, "s"):
        return money(t.to("ms"), 3)
    return money(t, 3) if t < Q_(2, "minute") else money(t.to("minute"), 3)


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


def _draw(rng, presets) -> Draw:
    name, chips = rng.choice(SETUPS)
    rental = rng.choice(RENTALS)
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    idle = Q_(*rng.choice(IDLE))
    promise = Q_(rng.choice(PROMISES), "s")
    model = presets.get("model", name)
    chip = presets.get("hardware", HARDWARE)
    n = Q_(chips, "chip")
    case = dict(hardware=HARDWARE, model=name, price=rental, context_length=context)
    case["presets"] = presets
    tokens = (context * ONE).to("token")
    gpus = f"one {chip.name} GPU" if chips == 1 else f"{number(chips)} {chip.name} GPUs"

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

    options = []  # (name, cost per million prefix tokens, time to have the cache back, detail)
    rows = []
    for tier in presets.tier.values():
        held = get("cache_hold_cost").evaluate_detailed(tier=tier.id, **case)
        price = held.inputs["tier_price"].value.to("USD/GB/hour")
        cost = (held.value * ONE * idle / tokens).to("USD/Mtoken")
        back = (cache / tier.bandwidth).to("s")
        options.append((tier.medium, cost, back, price))
        shown = tier.get("price", None)
        rows.append(
            f"- {tier.medium}: "
            + (
                f"{money(shown)}"
                if shown is not None
                else f"the GPU's rent for its {money(chip.hbm_capacity)}"
            )
            + f", read back at {money(tier.bandwidth)}"
        )
    recompute_cost = (recompute.value * ONE / tokens).to("USD/Mtoken")
    options.append(("recompute", recompute_cost, rebuild, None))

    feasible = sorted((o for o in options if o[2] <= promise), key=lambda o: o[1].m)
    best, runner = feasible[0], feasible[1] if len(feasible) > 1 else None
    margin = _margin(options, best, promise)
    cheapest = min(options, key=lambda o: o[1].m)

    month = (
        f"\n\nA month is a twelfth of a year, {number(Q_(1, 'month').to('hour').m, 4)} hours."
        if any("month" in row for row in rows)
        else ""
    )
    text = (
        f"You serve {model.name} in BF16 on {gpus} (rented at "
        f"{money(rent)}, {money(flops)} dense in BF16 per GPU). Its attention has "
        f"{number(model.layers)} layers, each with {number(model.n_kv_heads)} KV heads of "
        f"{number(model.head_dim)} values, and {number(model.n_heads)} query heads. A user's "
        f"conversation has reached {context_tokens(context, 6)}, and the user goes quiet; you "
        f"expect them back in {money(idle)}, and you promise that within {money(promise)} "
        "of their return the cache will be ready. You may keep the KV cache on one of these "
        "tiers (price per byte held, and the bandwidth of one device), or drop it and run the "
        "prefill again on the replica's GPUs when they return:\n\n"
        + "\n".join(rows)
        + month
        + "\n\nWhich choice meets the promise most cheaply, and what does it cost per million "
        "tokens of the conversation? (Count only holding, or only the recompute.)"
    )
    lines = "; ".join(f"{o[0]} {money(o[1], 3)} and {_time(o[2])}" for o in options[:-1])
    solution = [
        f"The cache is {money(per_token)} (a key and a value for each of "
        f"{number(model.n_kv_heads)} KV heads of {number(model.head_dim)} values in "
        f"{number(model.layers)} layers, two bytes each), so {money(cache, 3)} for the "
        f"{context_tokens(context, 6)}.",
        f"Holding it for {money(idle)} costs the tier's price per byte-hour times "
        f"{money(cache, 3)} times {money(idle)}; reading it back takes "
        f"{money(cache, 3)} over the tier's bandwidth. Per million tokens of conversation, "
        f"and time to read back: {lines}.",
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
            else f" ({number(dearer, 2)} times dearer)"
        )
    if margin < CLOSE - 1 and (runner is None or dearer >= CLOSE):
        verdict += (
            f"; close, though: {cheapest[0]} is cheaper and misses the promise by only "
            f"{number(100 * margin, 2)}%"
        )
    solution.append(f"{verdict}: **{money(best[1], 3)}**.")

    candidates = []
    if cheapest is not best:
        candidates.append(
            (
                cheapest[1],
                f"{_capital(cheapest[0])} is cheapest but not back within "
                f"{money(promise)}: reading {money(cache, 3)} takes {_time(cheapest[2])}.",
            )
        )
    if runner is not None:
        candidates.append((runner[1], f"{_capital(runner[0])} keeps the promise but costs more."))
    if best[0] != "recompute":
        candidates.append(
            (best[1] / 2, "You counted one vector per KV head; each caches a key and a value.")
        )
    else:
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
    mistakes: list[Mistake] = []
    for value, why in candidates:
        if all(
            abs((value / o).to("").m - 1) > 0.05 for o in [best[1], *(m.value for m in mistakes)]
        ):
            mistakes.append(Mistake(value, why))
    return Draw(
        hint=(
            "For each tier, check the read-back time against the promise first; only then "
            "compare what holding (or recomputing) costs."
        ),
        text=text,
        answer=best[1],
        solution=tuple(solution),
        tolerance=0.04,
        mistakes=tuple(mistakes),
        choices={"where": best[0]},
        margin=margin,
    )
