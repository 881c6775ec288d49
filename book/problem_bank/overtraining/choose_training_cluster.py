"""Pick the cluster and precision that pre-train a model by a deadline for the least money."""

from __future__ import annotations

from functools import partial

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, PresetsMemo, distinct_mistakes, require
from book.problem_bank._rents import rent
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "design"
TITLE = "The cheapest cluster that meets the deadline"
USES = ("chinchilla_tokens", "training_flops", "training_time")
LECTURE = "1:18:59"

# a model and how many times its compute-optimal (Chinchilla) count it is trained on: the
# student brings Chinchilla's tokens per active parameter as well as training's FLOPs per token
MODELS = (
    ("deepseek_v3", (10, 20, 30)),
    ("kimi_k2", (10, 20, 30)),
    ("llama_3_1_70b", (5, 10, 15)),
    ("llama_3_1_405b", (2, 4)),  # not 3: a third of the work is also the 2-FLOP slip
    ("qwen3_235b_a22b", (20, 50, 80)),
    ("gpt_oss_120b", (100, 200, 300)),
)
# chip, GPUs on offer (drawn), at the chip's declared rent: a lab's shopping list, three of these
OFFERS = (
    ("h100_sxm", (4096, 8192, 16384)),
    ("h200", (4096, 8192, 12288)),
    ("mi300x", (4096, 8192)),
    ("b200", (2048, 4096, 8192)),
    ("mi355x", (2048, 4096, 6144)),
    ("gb200_nvl72", (2016, 4032, 8064)),
    ("gb300_nvl72", (2016, 4032)),
)
SHOPPING = 3  # clusters on offer
# MFU in BF16, and in FP8 of the (doubled) FP8 peak: FP8 runs reach less of theirs
MFUS = ({"bf16": 0.4, "fp8": 0.3}, {"bf16": 0.45, "fp8": 0.3}, {"bf16": 0.35, "fp8": 0.25})
DEADLINES = (10, 14, 21, 30, 45, 60, 90, 120)  # days
MARGIN = 0.05
TOLERANCE = 0.02


def _money(q) -> str:
    """Dollars as a person says them: '35.18 million USD'."""
    return f"{number(q.to('USD').m / 1e6)} million USD"


def plan(offers, mfus, compute, deadline, presets):
    """Every option's days and bill for a run of ``compute`` FLOPs, and the cheapest that meets
    the deadline (None if none does): what a student computes, slip or not."""
    options = []
    for hardware, gpus in offers:
        price = rent(hardware)
        for precision, mfu in mfus.items():
            time, cost = _option(presets, hardware, gpus, precision, mfu, compute)
            options.append(
                dict(hardware=hardware, precision=precision, gpus=gpus, price=price, mfu=mfu)
                | dict(time=time, cost=cost)
            )
    ok = sorted((o for o in options if o["time"] <= deadline), key=lambda o: o["cost"])
    return options, ok, (ok[0] if ok else None)


# an option's days and bill by chip, GPUs, precision, MFU and FLOPs, once per presets object:
# a seed tries about thirty scenarios of a few thousand options, and plans each slip's count too
_OPTIONS = PresetsMemo()


def _option(presets, hardware: str, gpus, precision: str, mfu: float, compute):
    """The days and the bill of ``compute`` FLOPs on ``gpus`` of ``hardware`` at ``precision``
    and ``mfu``."""
    key = (hardware, gpus.m, gpus._units, precision, mfu)  # pint's units container: hashable
    key += (type(compute.m), compute.m, compute._units)
    return _OPTIONS(presets, key, partial(_bill, presets, hardware, gpus, precision, mfu, compute))


def _bill(presets, hardware: str, gpus, precision: str, mfu: float, compute):
    chip = presets.get("hardware", hardware)
    rate = gpus * chip.get(f"dense_flops_{precision}") * mfu / Q_(1, "chip")
    time = (compute / rate).to("day")
    return time, (time * gpus * rent(hardware)).to("USD")


def draw(rng, presets) -> Draw:
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    while True:
        model_id, times = rng.choice(MODELS)
        model = presets.get("model", model_id)
        active, total = model.params_active, model.params_total
        times = rng.choice(times)
        optimal = get("chinchilla_tokens").evaluate(n_active=active, presets=presets).to("token")
        per_param = (optimal / active).to("token/parameter")  # Chinchilla's 20
        tokens = (times * optimal).to("Ttoken")
        deadline = Q_(rng.choice(DEADLINES), "day")
        offers = [
            (h, Q_(rng.choice(counts), "chip"))
            for h, counts in sorted(rng.sample(OFFERS, SHOPPING), key=OFFERS.index)
        ]
        mfus = rng.choice(MFUS)
        compute = (
            get("training_flops")
            .evaluate(model=model_id, training_tokens=tokens, presets=presets)
            .to("FLOP")
        )
        training = (compute / (active * tokens)).to("FLOP/parameter/token")
        options, ok, best = plan(offers, mfus, compute, deadline, presets)
        time = get("training_time").evaluate(
            hardware=offers[0][0],
            model=model_id,
            precision="bf16",
            training_tokens=tokens,
            training_chips=offers[0][1],
            mfu=Q_(mfus["bf16"], ""),
            presets=presets,
        )
        require(abs((time / options[0]["time"]).to("").m - 1) < 1e-9, "the catalogue agrees")
        near = any(abs((o["time"] / deadline).to("").m - 1) < MARGIN for o in options)
        cheapest_overall = min(options, key=lambda o: o["cost"])
        wide = len(ok) >= 2 and (ok[1]["cost"] / ok[0]["cost"]).to("").m >= 1 + MARGIN
        if not (wide and not near and cheapest_overall is not ok[0]):
            continue
        # each slip pushed through the whole choice, as a student who makes it computes
        moe = (total / active).to("").m > 1.5
        slips = [
            (
                compute * forward / training,
                f"You counted {number(forward.m)} FLOP per parameter per token; training costs "
                f"{number(training.m)} (forward and backward).",
            ),
            (
                compute / times,
                f"You trained on the compute-optimal count itself; the run is {number(times)} "
                "times that.",
            ),
        ]
        if moe:
            slips.append(
                (
                    compute * total / active,
                    "You counted every parameter; a token only passes through the active "
                    "ones, and Chinchilla's count is per active parameter too.",
                )
            )
        values = []
        for slipped, why in slips:
            chosen = plan(offers, mfus, slipped, deadline, presets)[2]
            if chosen is None:  # nothing meets the deadline: no cost to name
                continue
            if (chosen["hardware"], chosen["precision"]) != (best["hardware"], best["precision"]):
                why += " With that count an option that is really " + (
                    "too slow looked fast enough."
                    if slipped < compute
                    else "fast enough looked too slow."
                )
            values.append((chosen["cost"], why))
        values.append(
            (
                cheapest_overall["cost"],
                "That option is cheapest but does not finish by the deadline.",
            )
        )
        gaps = [abs((v / best["cost"]).to("").m - 1) for v, _ in values]
        if all(gap >= 2 * TOLERANCE for gap in gaps):  # each named slip clear of the window
            break
    # how far the choice is ahead: the next one in time costs more, every cheaper one is late
    late = [(o["time"] / deadline).to("").m - 1 for o in options if o["cost"] < best["cost"]]
    margin = min([(ok[1]["cost"] / best["cost"]).to("").m - 1, *late])
    chips = {h: presets.get("hardware", h) for h, _ in offers}

    def name(h):
        return chips[h].name.replace(" (per GPU)", "")

    shown = []
    for hardware, gpus in offers:
        c = chips[hardware]
        shown.append(
            f"{int(gpus.m):,} {name(hardware)} GPUs at {number(rent(hardware).m)} USD per "
            f"GPU-hour (dense peak {quantity(c.get('dense_flops_bf16'))} at BF16, "
            f"{quantity(c.get('dense_flops_fp8'))} at FP8)"
        )
    params = (
        f"{quantity(total)} in all, {quantity(active)} active per token" if moe else quantity(total)
    )
    text = (
        f"You must pre-train {model.name} ({params}) on {number(times)} times its "
        f"compute-optimal (Chinchilla) token count within {quantity(deadline)}. Three clusters "
        "are on offer, each to be used whole: "
        + "; ".join(shown)
        + f". Training in BF16 reaches {number(100 * mfus['bf16'])}% MFU; in FP8 it reaches "
        f"{number(100 * mfus['fp8'])}% of the FP8 peak. Ignoring attention FLOPs, what "
        "does the run cost on the cluster and precision that finish in time for the least "
        "money? Answer in USD."
    )
    lines = [
        f"{name(o['hardware'])}, {o['precision'].upper()}: {quantity(o['time'])}, "
        f"{_money(o['cost'])}" + ("" if o["time"] <= deadline else ", too slow") + "."
        for o in options
    ]
    cheap = cheapest_overall
    solution = (
        f"Chinchilla's count is {quantity(per_param)}"
        + (", counting the active ones" if moe else "")
        + ": "
        f"{number(per_param.m)} × {quantity(active)} = {quantity(optimal.to('Ttoken'))}, so the "
        f"run sees {number(times)} × that = {quantity(tokens)}.",
        f"It needs {number(training.m)} FLOP per active parameter per token: "
        f"{number(training.m)} × {quantity(active)} × {quantity(tokens)} = "
        f"{quantity(compute)}.",
        "For each option, time = FLOPs / (GPUs × peak × MFU), and cost = time × GPUs × price, "
        "so the cost does not depend on how many GPUs there are, only on the price of a "
        "delivered FLOP; the number of GPUs decides whether the deadline is met.",
        *lines,
        f"The cheapest of all, {name(cheap['hardware'])} in {cheap['precision'].upper()}, misses "
        f"the deadline. The cheapest that meets it is {name(best['hardware'])} in "
        f"{best['precision'].upper()}: **{quantity(best['cost'].to('USD'), 4)}** "
        f"({_money(best['cost'])}); the next that meets it costs "
        f"{number(100 * ((ok[1]['cost'] / best['cost']).to('').m - 1), 2)}% more.",
    )
    mistakes = distinct_mistakes(
        [Mistake(v.to("USD"), why) for v, why in values], best["cost"], TOLERANCE
    )
    return Draw(
        text=text,
        answer=best["cost"].to("USD"),
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
        hint="How many tokens is that, and how many FLOPs? Then work out each option's days; "
        "only then compare prices.",
        choices={"hardware": best["hardware"], "precision": best["precision"]},
        margin=margin,
    )
