"""Fast mode's price and speed imply a smaller batch; the roofline says how fast that batch runs."""

from __future__ import annotations

import math
from functools import partial

from book.format import context_tokens, number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    PresetsMemo,
    Refused,
    clear_of_rounding,
    distinct_mistakes,
    evaluate,
    lands_clear,
    require,
    slips_apart,
)
from book.problem_bank.batching._figures import (
    attention_cost,
    cache_derived,
    cache_given,
    usable_share,
)
from derivations import get
from derivations.inputs import reachable
from units import Q_

KIND = "multi"
TITLE = "What fast mode's price says about its batch"
USES = ("fast_mode_batch_ratio", "weight_fetch_time", "kv_fetch_time", "step_time")

# dense models, so a small batch still reads every weight: a model, the chip counts that serve
# it, and the chips (model first, so the 70B is one model in three, not most draws)
MODELS = {"llama_3_1_8b": (1, 2), "llama_3_1_70b": (4, 8), "llama_3_1_405b": (8,)}
CHIPS = ("h100_sxm", "h200", "b200", "b300", "mi300x", "mi325x", "mi355x")
PRECISIONS = ("bf16", "fp8")
BATCHES = (64, 128, 256, 512)
CONTEXTS = (4096, 8192, 16_384, 32_768)
ATTEMPTS = 200  # scenarios drawn before the draw is refused (about half pass)
NAMES = {"bf16": "BF16", "fp8": "FP8"}
CHOICES = ("model", "hardware", "precision", "presets")
TOLERANCE = 0.01  # the answer's window: the whole batch decides the speed


def _ev(eq_id: str, case: dict, **extra):
    """``eq_id`` evaluated on the inputs of ``case`` it takes (the preset choices always)."""
    eq = get(eq_id)
    allowed = reachable(eq)
    args = {k: v for k, v in case.items() if k in CHOICES or k in allowed}
    return eq.evaluate(**args, **extra)


def _fast_batch(case: dict, batch: int, price_x: float) -> float:
    """The batch whose chip time per token is ``price_x`` times the standard one.

    The reads set the step, T(B) = W + B·k (weights W once, k of cache per sequence), so
    T(B)/B = price_x · T(B0)/B0 solves in closed form: B = W / (price_x · T(B0)/B0 − k).
    """
    b = Q_(batch, "sequence")
    weights = _ev("weight_fetch_time", case, batch_size=b)
    per_seq = _ev("kv_fetch_time", case, batch_size=b) / b
    per_token = (weights + per_seq * b) / b
    return (weights / (price_x * per_token - per_seq)).to("sequence").m


def draw(rng, presets) -> Draw:
    ratio = get("fast_mode_batch_ratio").evaluate_detailed(presets=presets)
    price_x = ratio.inputs["fast_price_multiplier"].value.to("").m
    speed_x = ratio.inputs["fast_speed_multiplier"].value.to("").m
    share = usable_share(presets)[0]  # the standard batch's caches fit beside the weights
    for _ in range(ATTEMPTS):
        name = rng.choice(tuple(MODELS))
        hardware, chips = rng.choice(CHIPS), rng.choice(MODELS[name])
        precision, batch = rng.choice(PRECISIONS), rng.choice(BATCHES)
        case = dict(
            model=name,
            hardware=hardware,
            precision=precision,
            n_chips=Q_(chips, "chip"),
            context_length=Q_(rng.choice(CONTEXTS), "token/sequence"),
            presets=presets,
        )
        # a scenario's checks depend on it alone: one refused before is refused at once
        key = (name, hardware, chips, precision, batch, case["context_length"].m)
        scenario = partial(_scenario, case, batch, price_x, speed_x, share, presets)
        try:
            return _REFUSED.refusing(presets, key, scenario)
        except Refused:
            continue
    raise Refused("no scenario in the draws tried")


# the scenarios refused on a presets object (of about a thousand; a seed tries a dozen)
_REFUSED = PresetsMemo()


def _scenario(case: dict, batch: int, price_x: float, speed_x: float, share, presets) -> Draw:
    """The drawn scenario's problem, or Refused if its checks (or the problem's) refuse it."""
    b = Q_(batch, "sequence")
    need = _ev("chips_to_fit", case, batch_size=b)
    reads = _ev("weight_fetch_time", case, batch_size=b) + _ev("kv_fetch_time", case, batch_size=b)
    # the reads set the step: the multiplies (attention's too) never bind, so the student
    # needs no attention FLOPs the statement does not give
    bound = _ev("compute_time", case, batch_size=b) < reads
    fits = need <= share * case["n_chips"]
    if not (fits and bound and _fast_batch(case, batch, price_x) >= 2):
        raise Refused("the caches fit, the reads bind and the fast batch is two or more")
    return _build(case, batch, price_x, speed_x, presets)


def _build(case: dict, batch: int, price_x: float, speed_x: float, presets) -> Draw:
    fast = _fast_batch(case, batch, price_x)
    model = presets.get("model", case["model"])
    chip = presets.get("hardware", case["hardware"])
    precision = NAMES[case["precision"]]

    steps: dict = {}  # each batch's step, evaluated once per scenario
    times: dict = {}  # each batch's step time alone: all a speed needs

    def step_time(b):
        if (type(b), b) not in times:
            times[type(b), b] = _ev("step_time", case, batch_size=Q_(b, "sequence")).to("ms")
        return times[type(b), b]

    def step(b):
        if (type(b), b) in steps:
            return steps[type(b), b]
        q = Q_(b, "sequence")
        parts = {
            eq: _ev(eq, case, batch_size=q).to("ms")
            for eq in ("weight_fetch_time", "kv_fetch_time", "compute_time")
        }
        parts["step_time"] = step_time(b)
        # the multiplies the student can count (two FLOPs per parameter); attention's own
        # FLOPs (in compute_time) add to them, and neither binds: the reads set the step
        short = dict(case, context_length=Q_(1, "token/sequence"))
        parts["weights_flops_time"] = _ev("compute_time", short, batch_size=q).to("ms")
        reads = parts["weight_fetch_time"] + parts["kv_fetch_time"]
        require(parts["compute_time"] < reads, "the multiplies, attention's too, never bind")
        require(abs((parts["step_time"] / reads).to("").m - 1) < 1e-9)
        steps[type(b), b] = parts
        return parts

    def speed(b):
        return (Q_(1, "token/sequence") / step_time(b)).to("token/s/sequence")

    # a batch is whole: the price covers the chip time per token at the same margin from the
    # implied batch up, so the provider runs the smallest whole batch at or above it
    require(clear_of_rounding(fast), "the whole batch is the same from the shown figures")
    whole = math.ceil(fast)
    slow = step(batch)
    answer = speed(whole)
    gain = (answer / speed(batch)).to("").m
    per_seq = (slow["kv_fetch_time"] / Q_(batch, "sequence")).to("ms/sequence")
    # one vector per KV head: every cache read (k) halves; rerun the chain with it, the
    # standard step, the implied batch and the fast step all read the halved caches
    weights, half_k = slow["weight_fetch_time"], per_seq / 2
    b0 = Q_(batch, "sequence")
    half_batch = weights / (price_x * (weights + half_k * b0) / b0 - half_k)
    half_batch = Q_(math.ceil(half_batch.to("sequence").m), "sequence")
    one_vector = (Q_(1, "token/sequence") / (weights + half_k * half_batch)).to("token/s/sequence")
    # by construction the halved cache nearly cancels where the caches set most of the standard
    # step: the price then fixes the fast batch's cache reads, B·k, near W/(price − 1) whatever
    # k is, so the slip moves the answer only through the weights' share and the rounding. It
    # lands inside the window (accepted, and the solution says why) or clear of it, named; it
    # never shares a value with the rounding slips (reader 29)
    cancels = abs((one_vector / answer).to("").m - 1) <= TOLERANCE
    # the rounding slips: the unrounded batch and the batch rounded down; where they land
    # within two windows of each other one message fits both (a batch under the whole batch
    # the price covers), else each names its own (reader 29)
    unrounded, down = speed(fast), speed(math.floor(fast))
    if abs((unrounded / down).to("").m - 1) >= 2 * TOLERANCE:
        rounding = (
            f"That is the speed at the unrounded {number(fast, 3)} sequences; a batch is "
            f"whole, and the price covers the chip time from {number(whole)} up.",
            f"You rounded the batch down to {number(math.floor(fast))}; at that batch a token "
            "costs more chip time than the price pays for, so the provider runs "
            f"{number(whole)}.",
        )
    else:
        rounding = (
            f"Your batch is under {number(whole)}, the smallest whole batch the price covers "
            f"(the price gives {number(fast, 3)} sequences; a smaller batch costs more chip "
            "time per token than the price pays for): round the batch up.",
        ) * 2
    candidates = (
        (unrounded, rounding[0]),
        (down, rounding[1]),
        (
            speed(math.ceil(batch / price_x)),
            "You divided the batch by the price multiple alone; the step shrinks with the "
            "batch too, so solve T(B)/B for the price with the step the roofline gives.",
        ),
        (
            speed(math.ceil(batch / (price_x * speed_x))),
            f"You assumed the step shrinks by the advertised {number(speed_x)}× and divided "
            f"the batch by {number(price_x)} × {number(speed_x)}; the roofline's step does not "
            "shrink that much, so the price allows a larger batch.",
        ),
        (
            speed(batch) * speed_x,
            "You took the advertised speed-up; the question asks what "
            "the roofline gives at the implied batch.",
        ),
        (speed(batch), "That is the standard mode's speed, at the full batch."),
        (  # the caches left out of both the price and the step: B0/price, reading weights only
            (Q_(1, "token/sequence") / slow["weight_fetch_time"]).to("token/s/sequence"),
            "You left out the caches' reads: each sequence's cache is read every step, in the "
            "price's step and in the fast one.",
        ),
    )
    candidates = (
        (
            one_vector,
            "You counted one vector per KV head; each caches a key and a value, so every "
            "sequence's cache read is twice what you used.",
        ),
        *candidates,
    )
    tolerance = TOLERANCE
    slips = [Mistake(v, w) for v, w in candidates]
    # no two slips land on one value (reader 21: the price-alone slip and the advertised
    # speed-up; reader 29: rounding the batch down and one vector per head), save the two
    # rounding slips, which share a message where they land together
    for skip in (1, 2):  # the unrounded batch, the batch rounded down
        apart = [m for k, m in enumerate(slips) if k != skip]
        require(slips_apart(apart, answer, tolerance), "each wrong value has one diagnosis")
    for k, slip in enumerate(slips):  # never just outside the window (reader 20)
        # the lesson's slips (one vector per head, the batch cut by the price alone, the caches
        # left out) land clear of the window; another may fall inside it (accepted)
        lesson = k in (3, len(slips) - 1)
        inside = abs((slip.value / answer).to("").m - 1) <= tolerance
        require(lands_clear(slip.value, answer, tolerance) and not (lesson and inside), "clear")
    # the physics holds at every batch the solution and the slips run (checked after the
    # slips, which refuse most scenarios from their step times alone)
    quick = step(whole)
    for _, b in list(times):
        step(b)
    flops = get("compute_time").evaluate_detailed(batch_size=Q_(1, "sequence"), **case)
    flops = flops.inputs["flops"].value
    per_token = _ev("kv_bytes_per_token", case).to("kB/token")

    gpu, count = chip.name.split(" (")[0], case["n_chips"].m
    gpus = f"one {gpu} GPU" if count == 1 else f"{number(count)} {gpu} GPUs"
    text = (
        f"A provider serves {model.name} ({quantity(model.params_total)}, dense) in "
        f"{precision} on {gpus} "
        f"({quantity(flops)} dense in {precision} and {quantity(chip.hbm_bandwidth)} of HBM"
        f"{'' if count == 1 else ' each'}) at a batch of {quantity(Q_(batch, 'sequence'))}, "
        "every sequence at about "
        f"{context_tokens(case['context_length'])} of context ("
        f"{cache_given(case['model'], presets, per_token)}, cached in {precision}; "
        f"{attention_cost(case['model'], presets)}"
        "). It launches a fast mode at "
        f"{number(price_x)} times the price per token for {number(speed_x)} times the speed "
        "per user, pricing both modes at the same margin over chip time. Run at the smallest "
        "whole batch that price still covers, how many tokens per second would each fast-mode "
        "sequence get on the roofline? Answer in tokens per second per sequence."
    )
    per_value = evaluate("kv_bytes_per_token", detailed=True, **case).inputs
    per_value = per_value["kv_bytes_per_value"].value
    solution = (
        f"A token of context caches {cache_derived(case['model'], presets, per_token, per_value)}"
        f"; over {context_tokens(case['context_length'])}, each sequence's cache takes "
        f"{quantity(per_seq * Q_(1, 'sequence'), 3)} to read. "
        f"At the standard batch a step reads the weights in {quantity(slow['weight_fetch_time'])} "
        f"and the caches in {quantity(slow['kv_fetch_time'])}, against "
        f"{quantity(slow['weights_flops_time'])} of multiplies in the weights (attention's "
        "own FLOPs add to them, but the reads still bind): "
        f"{quantity(slow['step_time'])}, so each user gets {quantity(speed(batch))}.",
        "The price of a token is the chip time per token, the step time over the batch. The "
        "step is the weights once plus each sequence's cache, T(B) = W + B·k with "
        f"k = {quantity(per_seq, 3)}. Set T(B)/B = W/B + k to {number(price_x)} times the "
        f"standard {quantity(slow['step_time'], 4)} / {quantity(Q_(batch, 'sequence'))} and "
        f"solve: B = W / ({number(price_x)} × T/B − k) ≈ {number(fast, 3)} sequences. A batch "
        "is whole, and a smaller one costs more chip time per token than the price pays for: "
        f"the provider runs {quantity(Q_(whole, 'sequence'))}.",
        f"At that batch the weights still take {quantity(quick['weight_fetch_time'])}, the "
        f"caches only {quantity(quick['kv_fetch_time'])} and the multiplies "
        f"{quantity(quick['weights_flops_time'])}: a step of {quantity(quick['step_time'])}."
        + (
            " (Had each sequence's cache been half as large, the price would allow "
            f"{quantity(half_batch)} and the step would come out at "
            f"{quantity((weights + half_k * half_batch).to('ms'))}, within {TOLERANCE:.0%} of "
            "this one: when the caches set most of the standard step, their size nearly drops "
            "out of the fast one.)"
            if cancels
            else ""
        ),
        f"One token per {quantity(quick['step_time'])} step is {number(gain, 3)} times the "
        "standard speed, against the "
        f"{number(speed_x)} times advertised"
        + (
            ": the price leaves the provider room (a somewhat larger batch would still "
            "deliver the speed). "
            if gain > speed_x
            else ": the weight reads set a floor the smaller batch cannot get under, so the "
            "price alone does not buy the advertised speed. "
        )
        + f"Each user gets **{quantity(answer, 4)}**.",
    )
    mistakes = distinct_mistakes(slips, answer, tolerance)
    return Draw(
        hint=(
            "Equal margins make the price ratio the ratio of chip time per token; find the "
            "batch whose step, shared by fewer tokens, costs that much more, then round it to "
            "a whole batch the price still covers."
        ),
        text=text,
        answer=answer,
        solution=solution,
        tolerance=tolerance,
        mistakes=tuple(mistakes),
    )
