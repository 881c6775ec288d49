"""Pick the cluster and precision that pre-train a model by a deadline for the least money."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from book.problem_bank._rents import rent
from book.problem_bank.overtraining._runs import model_and_tokens
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "design"
TITLE = "The cheapest cluster that meets the deadline"
USES = ("training_flops", "training_time")
LECTURE = "1:18:59"

MODELS = (
    ("deepseek_v3", None),
    ("kimi_k2", None),
    ("llama_3_1_70b", (12, 15, 20)),
    ("llama_3_1_405b", (10, 15, 20)),
    ("qwen3_235b_a22b", (24, 30, 36)),
    ("gpt_oss_120b", (20, 30, 40)),
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


def _money(q) -> str:
    """Dollars as a person says them: '35.18 million USD'."""
    return f"{number(q.to('USD').m / 1e6)} million USD"


def draw(rng, presets) -> Draw:
    while True:
        model_id, model, tokens = model_and_tokens(rng, presets, MODELS)
        deadline = Q_(rng.choice(DEADLINES), "day")
        offers = sorted(rng.sample(OFFERS, SHOPPING), key=OFFERS.index)
        mfus = rng.choice(MFUS)
        options = []
        for hardware, counts in offers:
            gpus, price = Q_(rng.choice(counts), "chip"), rent(hardware)
            for precision, mfu in mfus.items():
                time = (
                    get("training_time")
                    .evaluate(
                        hardware=hardware,
                        model=model_id,
                        precision=precision,
                        training_tokens=tokens,
                        training_chips=gpus,
                        mfu=Q_(mfu, ""),
                        presets=presets,
                    )
                    .to("day")
                )
                cost = (time * gpus * price).to("USD")
                options.append(
                    dict(
                        hardware=hardware,
                        precision=precision,
                        gpus=gpus,
                        price=price,
                        mfu=mfu,
                        time=time,
                        cost=cost,
                    )
                )
        ok = sorted((o for o in options if o["time"] <= deadline), key=lambda o: o["cost"])
        near = any(abs((o["time"] / deadline).to("").m - 1) < MARGIN for o in options)
        cheapest_overall = min(options, key=lambda o: o["cost"])
        wide = len(ok) >= 2 and (ok[1]["cost"] / ok[0]["cost"]).to("").m >= 1 + MARGIN
        if wide and not near and cheapest_overall is not ok[0]:
            break
    best = ok[0]
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    training = (compute / (model.params_active * tokens)).to("FLOP/parameter/token")
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    # how far the choice is ahead: the next one in time costs more, every cheaper one is late
    late = [(o["time"] / deadline).to("").m - 1 for o in options if o["cost"] < best["cost"]]
    margin = min([(ok[1]["cost"] / best["cost"]).to("").m - 1, *late])
    chips = {h: presets.get("hardware", h) for h, _ in offers}

    def name(h):
        return chips[h].name.replace(" (per GPU)", "")

    shown = []
    for hardware, _ in offers:
        o = next(o for o in options if o["hardware"] == hardware)
        c = chips[hardware]
        shown.append(
            f"{int(o['gpus'].m):,} {name(hardware)} GPUs at {number(o['price'].m)} USD per "
            f"GPU-hour (dense peak {quantity(c.get('dense_flops_bf16'))} at BF16, "
            f"{quantity(c.get('dense_flops_fp8'))} at FP8)"
        )
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    text = (
        f"You must pre-train {model.name} ({params}) on {quantity(tokens)} within "
        f"{quantity(deadline)}. Three clusters are on offer, each to be used whole: "
        + "; ".join(shown)
        + f". Training in BF16 reaches {number(100 * mfus['bf16'])}% MFU; in FP8 it reaches "
        f"{number(100 * mfus['fp8'])}% of the FP8 peak. Ignoring attention FLOPs, which "
        "cluster and precision finish in time for the least money, and what does the run "
        "cost? Answer in USD."
    )
    lines = [
        f"{name(o['hardware'])}, {o['precision'].upper()}: {quantity(o['time'])}, "
        f"{_money(o['cost'])}" + ("" if o["time"] <= deadline else ", too slow") + "."
        for o in options
    ]
    cheap = cheapest_overall
    solution = (
        f"The run needs {number(training.m)} FLOP per active parameter per token: "
        f"{number(training.m)} × {quantity(model.params_active)} × {quantity(tokens)} = "
        f"{quantity(compute)}.",
        "For each option, time = FLOPs / (GPUs × peak × MFU), and cost = time × GPUs × price, "
        "so the cost does not depend on how many GPUs there are, only on the price of a "
        "delivered FLOP; the number of GPUs decides whether the deadline is met.",
        *lines,
        f"The cheapest of all, {name(cheap['hardware'])} in {cheap['precision'].upper()}, misses "
        f"the deadline. The cheapest that meets it is {name(best['hardware'])} in "
        f"{best['precision'].upper()}: **{quantity(best['cost'].to('USD'), 3)}** "
        f"({_money(best['cost'])}); the next that meets it costs "
        f"{number(100 * ((ok[1]['cost'] / best['cost']).to('').m - 1), 2)}% more.",
    )
    mistakes = (
        Mistake(
            (best["cost"] * forward / training).to("USD"),
            f"You counted {number(forward.m)} FLOP per parameter per token; training costs "
            f"{number(training.m)} (forward and backward).",
        ),
        Mistake(cheap["cost"], "That option is cheapest but does not finish by the deadline."),
    )
    if moe:
        mistakes += (
            Mistake(
                (best["cost"] * model.params_total / model.params_active).to("USD"),
                "You counted every parameter; a token only passes through the active ones.",
            ),
        )
    return Draw(
        text=text,
        answer=best["cost"].to("USD"),
        solution=solution,
        tolerance=0.02,
        # twice the 2% window: a slip nearer is graded wrong but not named
        mistakes=tuple(m for m in mistakes if abs((m.value / best["cost"]).to("").m - 1) >= 0.04),
        hint="Work out each option's days first; only then compare prices.",
        choices={"hardware": best["hardware"], "precision": best["precision"]},
        margin=margin,
    )
