"""How many long conversations fit in a node's HBM once the weights are in."""

from __future__ import annotations

import math
from functools import cache

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, Refused, whole_count_tolerance
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "How many long conversations fit in HBM"
USES = ("kv_bytes_per_token", "kv_cache_per_sequence", "chips_to_fit")

# model: the chip counts that hold its FP8 weights with room for a handful of long caches. The
# model is drawn first, then a chip and a context it passes on, so each model is a third of the
# draws (not the 70B most). An 8B's weights are too small a share for the weight slips to land
# apart, and Mixtral's 32k context holds too many conversations to keep clear of rounding.
MODELS = {
    "llama_3_1_70b": (1, 2),
    "llama_3_1_405b": (4, 8),
    "qwen3_235b_a22b": (2, 4),
}
CHIPS = ("h100_sxm", "h200", "b200", "b300", "mi300x", "mi325x", "mi355x")
# every 4,096 tokens from 16k to Llama's 128k: a count clear of rounding (CLEAR) is one context
# in several, so a fine grid is what gives the draws their range
CONTEXTS = tuple(range(16_384, 131_072 + 1, 4096))
ATTEMPTS = 300  # scenarios drawn before the draw is refused (one in several passes)
FEWEST = 3  # sequences: at these contexts a node holds a handful of conversations
TWO_BYTES = (
    "You counted two bytes a value where FP8 stores one: the weights and the KV cache are both "
    "FP8 here, one byte each."
)
ROUNDED_UP = (
    "You rounded the quotient up: only whole conversations fit, so round it down (the last "
    "conversation's cache would not fit)."
)
BF16_WEIGHTS, BF16_CACHE, BF16_BOTH = 1, 3, 6  # the places of the two-byte slips in _slips
CLEAR = 0.05  # the unrounded count keeps this far (relative) from both whole numbers around
# it: a student who rounds every step to three figures still gets the same count


@cache
def _solved(equation, name: str):
    """``equation.solve_for(name)``, once per catalogue equation (a new solved equation on
    every call compiles, and misses the evaluation memo, afresh)."""
    return equation.solve_for(name)


def draw(rng, presets) -> Draw:
    fits = _solved(get("chips_to_fit"), "batch_size")
    share = presets.parameter["usable_hbm_share"].value.to("").m
    name = rng.choice(tuple(MODELS))
    for _ in range(ATTEMPTS):
        hardware, chips = rng.choice(CHIPS), rng.choice(MODELS[name])
        ctx = Q_(rng.choice(CONTEXTS), "token/sequence")
        case = dict(
            model=name,
            hardware=hardware,
            precision="fp8",
            # an engine fills only a share of each GPU's HBM: the batch that fills that share
            # of the chips is the batch that fits (vLLM's gpu_memory_utilization)
            chips_to_fit=Q_(chips * share, "chip"),
            presets=presets,
        )
        if not _positive(fits, dict(case, context_length=ctx)):
            continue  # the weights alone overfill what an engine fills
        batch = fits.evaluate(context_length=ctx, **case).to("sequence")
        if (
            batch.magnitude >= FEWEST
            and _clear(batch.magnitude)
            and _apart(_slips(fits, case, ctx, presets), batch.magnitude)
            # the unrounded quotient, a natural slip, lands twice the window out
            and batch.magnitude / math.floor(batch.magnitude) - 1
            >= 2 * whole_count_tolerance(math.floor(batch.magnitude))
        ):
            break
    else:
        raise Refused("no scenario in the draws tried")
    context, exact = ctx, batch
    model = presets.get("model", case["model"])
    chip = presets.get("hardware", case["hardware"])
    chips = Q_(round(case["chips_to_fit"].m / share), "chip")
    batch = Q_(math.floor(exact.magnitude), "sequence")

    per_token = get("kv_bytes_per_token").evaluate_detailed(
        model=model.id, precision="fp8", presets=presets
    )
    values = per_token.inputs["kv_values_per_token"].value
    per_token = per_token.value.to("kB/token")
    one = Q_(1, "sequence")
    per_sequence = (
        get("kv_cache_per_sequence").evaluate(
            model=model.id, precision="fp8", context_length=context, presets=presets
        )
        * one
    ).to("GB")
    used = fits.evaluate_detailed(context_length=context, **case).inputs
    weights = (used["n_total"].value * used["weight_bytes_per_value"].value).to("GB")
    hbm = (chip.hbm_capacity * chips / Q_(1, "chip")).to("GB")
    free = share * hbm - weights

    size = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if model.get("experts_routed")
        else f"{quantity(model.params_total)}, dense"
    )
    every = "expert" if model.get("experts_routed") else "parameter"
    cache_size = per_sequence if per_sequence >= Q_(1, "GB") else per_sequence.to("MB")
    where = "the node" if chips.magnitude > 1 else "the GPU"
    text = (
        f"You serve {model.name} ({size}) on {_gpus(chips.magnitude, chip)} with "
        f"{quantity(chip.hbm_capacity)} of HBM{' each' if chips.magnitude > 1 else ''} "
        f"(an engine fills at most {number(100 * share)}% of it), "
        "weights and KV cache both at FP8. It uses grouped-query attention in all "
        f"{number(model.layers)} layers, with {number(model.n_kv_heads)} KV heads of "
        f"{number(model.head_dim)} values. Counting only the weights and the KV cache, how many "
        f"conversations of {context_tokens(context, 6)} can {where} hold at once?"
    )
    solution = (
        f"Every {every} must sit in HBM, so the weights take all {quantity(model.params_total)} "
        f"at one byte each: {quantity(weights)}. "
        + (
            f"The node has {number(chips.magnitude)} × {quantity(chip.hbm_capacity)} = "
            if chips.magnitude > 1
            else "The GPU has "
        )
        + f"{quantity(hbm)}; an engine fills {number(100 * share)}% of it, "
        f"{quantity(share * hbm)}, which leaves {quantity(free)} for caches.",
        "A token caches a key and a value per KV head per layer: "
        f"{quantity(values, 6)}, at one byte each, {quantity(per_token)}.",
        f"One conversation of {context_tokens(context, 6)} therefore holds {quantity(cache_size)}. "
        "Batching shares the weights between conversations, never the caches.",
        f"{quantity(free)} / {quantity(cache_size)} = {number(exact.magnitude)}, and only whole "
        f"conversations fit: at most **{quantity(batch)}**.",
    )
    both = _floor(_slips(fits, case, context, presets)[BF16_BOTH])
    if both is None or both < 1:  # a count the checker cannot take (reader 26): said here
        solution = (
            solution[0]
            + " (At two bytes a value for both the weights and the cache, as BF16 would "
            "store them, not one conversation would fit: FP8 is what makes room.)",
            *solution[1:],
        )

    candidates = _slips(fits, case, context, presets)
    # the quotient itself (reader 26: 5.67 was told to check the working): only whole
    # conversations fit (_unrounded_clear: twice the window from the count and the next)
    unrounded = Mistake(
        exact,
        f"That is the quotient, {number(exact.magnitude)}; only whole conversations fit, so "
        "round it down.",
    )
    # the count rounded up, as a student who rounds the quotient (3.496 to 3.5, then up) gets:
    # its own message, never another slip's (reader 26: told "you filled the whole HBM")
    up = _floor((batch + one, None))
    if all(_floor(slip) != up for slip in candidates):  # else a slip's (_apart: under a half)
        mistakes, taken = [Mistake(batch + one, ROUNDED_UP)], {math.floor(batch.m): None, up: 0}
    else:
        mistakes, taken = [], {math.floor(batch.m): None}
    for value, why in candidates:  # a slip rounds down too; one value, one diagnosis
        if value is None or math.floor(value.m) <= 0:
            continue
        count = math.floor(value.m)
        if count in taken:  # only the two two-byte slips may meet (_apart): name their error
            if taken[count] is not None:
                mistakes[taken[count]] = Mistake(Q_(count, "sequence"), TWO_BYTES)
            continue
        taken[count] = len(mistakes)
        mistakes.append(Mistake(Q_(count, "sequence"), why))
    if _unrounded_clear(exact.magnitude):
        mistakes.append(unrounded)
    return Draw(
        hint=(
            "Take the weights out of the HBM first; then divide what is left by one "
            "conversation's cache."
        ),
        text=text,
        answer=batch,
        solution=solution,
        tolerance=whole_count_tolerance(batch.m),
        mistakes=tuple(mistakes),
    )


def _slips(fits, case, context, presets) -> list:
    """The natural slips' counts (unrounded; None where a slip overflows the HBM) and why."""
    model = presets.get("model", case["model"])
    per_token = get("kv_bytes_per_token").evaluate(model=model.id, precision="fp8", presets=presets)
    per_sequence = get("kv_cache_per_sequence").evaluate(
        model=model.id, precision="fp8", context_length=context, presets=presets
    ) * Q_(1, "sequence")
    chip = presets.get("hardware", case["hardware"])
    hbm = chip.hbm_capacity * case["chips_to_fit"] / Q_(1, "chip")  # the share an engine fills
    share = presets.parameter["usable_hbm_share"].value.to("").m

    def fit(**change):
        args = dict(case, context_length=context, **change)
        return fits.evaluate(**args).to("sequence") if _positive(fits, args) else None

    return [
        (
            fit(n_total=model.params_active),
            "You stored only the active parameters; every expert must be in HBM, since any "
            "token may be routed to it.",
        ),
        (
            fit(weight_precision="bf16"),
            "You stored the weights at two bytes per parameter; FP8 is one byte.",
        ),
        (
            fit(kv_bytes_per_token=per_token / 2),
            "You counted one vector per KV head per layer; a key and a value are two.",
        ),
        (
            fit(kv_precision="bf16"),
            "You stored the KV cache at two bytes per value; it is FP8, one byte.",
        ),
        (
            Q_((hbm / per_sequence).to("").m, "sequence"),
            "You left out the weights: they take their share of HBM before any cache.",
        ),
        (
            fit(chips_to_fit=case["chips_to_fit"] / share),
            f"You filled the whole HBM; an engine fills at most {number(100 * share)}% of it.",
        ),
        (
            fit(weight_precision="bf16", kv_precision="bf16"),
            "You stored both the weights and the KV cache at two bytes per value; both are "
            "FP8 here, one byte each.",
        ),
    ]


def _apart(slips, count: float) -> bool:
    """Whether every slip that changes the count rounds down to a count of its own, and none to
    the count rounded to the nearest (a slip of its own where the fraction is near a half or
    over), so that a wrong count names the slip that gives it. The weights and the cache at two
    bytes may meet (reader 19: a BF16 cache was told it stored the weights at two bytes): their
    one message, TWO_BYTES, names what both did."""
    counts = [_floor(slip) for slip in slips]
    if counts[BF16_BOTH] in (counts[BF16_CACHE], counts[BF16_WEIGHTS]):
        counts[BF16_BOTH] = None  # TWO_BYTES names it too
    if counts[BF16_CACHE] == counts[BF16_WEIGHTS]:
        counts[BF16_CACHE] = None
    counts = [c for c in counts if c is not None and c > 0 and c != math.floor(count)]
    # the count rounded to the nearest is a slip of its own where the quotient's fraction is a
    # half or more (3.496, read as 3.5): no other slip lands on it
    if count - math.floor(count) >= 0.5 - CLEAR:
        counts.append(math.floor(count) + 1)
    return len(counts) == len(set(counts))


def _unrounded_clear(count: float) -> bool:
    """Whether the unrounded quotient lands twice the window from the count and outside the
    next whole count's, so that its own message (only whole conversations fit) is the one it
    gets; nearer the next, the count rounded up names it.

    >>> _unrounded_clear(5.67), _unrounded_clear(5.1), _unrounded_clear(5.9)
    (True, False, False)
    """
    low, high = math.floor(count), math.floor(count) + 1
    window = whole_count_tolerance(low)
    return count / low - 1 >= 2 * window and 1 - count / high > window


def _floor(slip):
    value = slip[0]
    return None if value is None else math.floor(value.m)


def _gpus(count: float, chip) -> str:
    """``count`` GPUs of ``chip`` in words: "one H200 GPU", "4 H200 GPUs"."""
    name = chip.name.split(" (")[0]
    return f"one {name} GPU" if count == 1 else f"{number(count)} {name} GPUs"


def _clear(count: float) -> bool:
    """Whether ``count`` keeps ``CLEAR`` (relative) from both whole numbers around it.

    >>> _clear(52.15), _clear(4.67), _clear(9.35)
    (False, True, False)
    """
    return min(count - math.floor(count), math.ceil(count) - count) >= CLEAR * count


def _positive(equation, args) -> bool:
    """Whether ``equation`` gives a positive value on ``args`` (a slip may overflow the node)."""
    from units import ChalkboardError

    try:
        equation.evaluate(**args)
    except ChalkboardError:
        return False
    return True
