"""A measured speed above the roofline bound: what the bound left out (speculative decoding)."""

from __future__ import annotations

import math

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, lands_clear, require
from derivations import get
from derivations.notation import decode_tokens_per_sequence
from units import Q_

KIND = "multi"
TITLE = "A user speed faster than the bound"
USES = ("weight_fetch_time", "kv_fetch_time", "step_time", "decode_rate_per_user")

# dense models at batch 1: (model, chip, chips, precision)
SETUPS = (
    ("llama_3_3_70b", "b200", 8, "fp8"),
    ("llama_3_1_70b", "h100_sxm", 4, "fp8"),
    ("llama_3_1_8b", "h100_sxm", 1, "bf16"),
    ("llama_3_1_405b", "h200", 8, "fp8"),
)
CONTEXTS = (16_384, 32_768, 65_536)  # long enough that the cache is a real share of the reads
BEYOND = (1.5, 1.8, 2.2, 2.6, 3.1)  # how far the claimed speed sits above the bound
NAMES = {"bf16": "BF16", "fp8": "FP8"}
TOLERANCE = 0.03
ONE_TOKEN = decode_tokens_per_sequence.value  # what a step gives each sequence, by the bound


def _t(q) -> str:
    """A short time in ms, or in µs below a tenth of a millisecond."""
    return quantity(q.to("µs") if q < Q_(0.1, "ms") else q.to("ms"))


def draw(rng, presets) -> Draw:
    name, hardware, chips, precision = rng.choice(SETUPS)
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    beyond = rng.choice(BEYOND)
    model = presets.get("model", name)
    chip = presets.get("hardware", hardware)
    one = Q_(1, "sequence")
    case = dict(
        model=name,
        hardware=hardware,
        precision=precision,
        n_chips=Q_(chips, "chip"),
        presets=presets,
    )
    weights = get("weight_fetch_time").evaluate(batch_size=one, **case).to("ms")
    kv = get("kv_fetch_time").evaluate(batch_size=one, context_length=context, **case).to("ms")
    step = get("step_time").evaluate(batch_size=one, context_length=context, **case).to("ms")
    compute = get("compute_time").evaluate(batch_size=one, context_length=context, **case)
    bound = get("decode_rate_per_user").evaluate(step_time=step, presets=presets)
    bound = bound.to("token/s/sequence")
    # the engine's claim: a round figure that far above the bound
    claimed = Q_(float(f"{bound.m * beyond:.2g}"), "token/s/sequence")
    user = Q_(1, "sequence")  # the one user's sequence: a count of tokens per step
    per_step = (claimed * step * user).to("token")
    above = (claimed / bound).to("").m
    draft_compute = (compute * per_step.m).to("ms")
    per_kv = get("kv_bytes_per_token").evaluate(model=name, precision=precision, presets=presets)
    # the deployment holds what its step reads: the weights and the user's cache
    held = (weights + kv) * chips * chip.hbm_bandwidth
    usable = presets.parameter["usable_hbm_share"].value.to("").m  # what an engine fills
    require(held <= usable * chips * chip.hbm_capacity, "the weights and the cache fit")

    require(draft_compute < step, "the drafted tokens' multiplies stay under the reads")
    gpus = "one" if chips == 1 else number(chips)
    text = (
        f"An engine serves {model.name} ({quantity(model.params_total)}, dense) in "
        f"{NAMES[precision]} on {gpus} {chip.name.split(' (')[0]} "
        f"GPU{'' if chips == 1 else 's'} ({quantity(chip.get(f'dense_flops_{precision}'))} "
        f"dense in {NAMES[precision]} and {quantity(chip.hbm_bandwidth)} of HBM each) to a "
        f"single user, whose context is about {context_tokens(context, 6)} (the KV cache costs "
        f"{quantity(per_kv.to('kB/token'))}). Its log shows {quantity(claimed)} for that user. "
        "No decode step beats its roofline bound (leave attention's FLOPs out). If the "
        "measurement is right, how many tokens must each step give the user on average? "
        "Answer in tokens per step, to three figures: an average need not be whole."
    )
    solution = (
        f"At batch one a step reads every weight, {_t(weights)} at the bandwidth of "
        f"{'the GPU' if chips == 1 else 'all ' + gpus + ' GPUs'}, and the user's cache, "
        f"{_t(kv)}: {_t(step)}. The multiplies take only {_t(compute)}.",
        f"One token per step allows at most {quantity(bound)}: the measurement is "
        f"{number(above, 3)} times that, so the bound's one-token-per-step assumption fails.",
        "The engine must be decoding speculatively, checking several drafted tokens in one "
        "pass over the weights; the multiplies of the tokens counted below take only "
        f"{_t(draft_compute)}, under the reads, so the step time holds.",
        f"Each step must give the user {quantity(claimed)} × {quantity(step)} = "
        f"**{quantity(per_step, 3)}** a step on average.",
    )
    at = dict(batch_size=one, context_length=context)
    alone = dict(case, n_chips=Q_(1, "chip"))
    wide = dict(case, weight_precision="bf16")
    candidates = (
        (
            (claimed * get("step_time").evaluate(**at, **alone) * user).to("token")
            if chips > 1
            else None,
            "You read the weights at one GPU's bandwidth; the replica's GPUs read their "
            "shares in parallel.",
        ),
        (
            (claimed * get("step_time").evaluate(**at, **wide) * user).to("token")
            if precision == "fp8"
            else None,
            "You read the weights at two bytes each; FP8 is one.",
        ),
        (
            (ONE_TOKEN * user).to("token"),
            "One token per step is what the bound assumes; the measurement needs more.",
        ),
        (
            Q_(math.ceil(per_step.m), "token"),
            "Tokens per step is an average over many steps, not a whole count: give it to "
            "three figures.",
        ),
        (
            Q_(math.floor(per_step.m), "token") if per_step.m >= 2 else None,
            "Tokens per step is an average over many steps, not a whole count: give it to "
            "three figures.",
        ),
        (
            (claimed * weights * user).to("token"),
            "You left out the reads of the user's KV cache: a step reads it beside the weights.",
        ),
    )
    # every slip, the whole chain rerun: inside the window, or twice it away and named
    require(
        all(
            lands_clear(value, per_step, TOLERANCE) for value, _ in candidates if value is not None
        ),
        "no slip lands just outside the window",
    )
    values = [value.to("token").m for value, _ in candidates if value is not None]
    require(  # two slips on one value would get one message: redraw (a whole count beside
        # the no-KV slip, reader 22)
        all(
            a == b or min(abs(a / b - 1), abs(b / a - 1)) > TOLERANCE
            for i, a in enumerate(values)
            for b in values[:i]
        ),
        "the slips land apart",
    )
    mistakes = [Mistake(value, why) for value, why in candidates if value is not None]
    return Draw(
        hint=(
            "First find the shortest a step can be at batch one; then ask what the logged "
            "speed implies for each step."
        ),
        text=text,
        answer=per_step,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, per_step, TOLERANCE),
    )
