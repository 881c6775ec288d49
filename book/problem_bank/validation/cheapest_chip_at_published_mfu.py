"""A published run's utilisation, backed out with 6ND, carried to another model: on which chip
and precision is the pre-training cheapest, and what is the bill? The count of chips sets only
the time, not the bill."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from book.problem_bank._rents import rent
from book.problem_bank.validation._published import NEW, RUNS, published_mfu
from derivations import get
from units import Q_

KIND = "design"
TITLE = "Which chip trains it for the least money?"
USES = ("training_flops", "training_rate_bound", "model_flops_utilization", "training_time")
LECTURE = "1:18:59"

CLUSTERS = (  # the new run's chip and precision
    ("h100_sxm", "bf16"),
    ("h100_sxm", "fp8"),
    ("b200", "bf16"),
    ("b200", "fp8"),
    ("gb200_nvl72", "fp8"),
    ("h200", "bf16"),
    ("mi300x", "bf16"),
    ("mi300x", "fp8"),
    ("mi355x", "fp8"),
)
OFFERED = 3  # options on the shopping list
TOLERANCE = 0.02  # the answer is computed from the MFU at the three figures shown
MARGIN = 0.05  # redraw a near tie
NAMES = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4"}


def _params(model) -> str:
    if model.get("experts_routed") is None:
        return f"{quantity(model.params_total)}, dense"
    return (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
    )


def _name(chip) -> str:
    return chip.name.split(" (")[0]


def draw(rng, presets) -> Draw:
    while True:
        run = presets.get("measurement", rng.choice(RUNS))
        model_id, token_choices = rng.choice([m for m in NEW if m[0] != run.model])
        tokens = Q_(rng.choice(token_choices), "Ttoken").to("token")
        offers = rng.sample([c for c in CLUSTERS if c[0] != run.hardware], OFFERED)
        old_flops, measured, bound, mfu = published_mfu(run, presets)
        case = dict(model=model_id, training_tokens=tokens, mfu=mfu, presets=presets)
        options = []
        for hardware, precision in offers:
            one = Q_(1, "chip")
            time = get("training_time").evaluate(
                hardware=hardware, precision=precision, training_chips=one, **case
            )
            hours = (time * one).to("chip*hour")
            options.append(
                dict(
                    hardware=hardware,
                    precision=precision,
                    hours=hours,
                    cost=(hours * rent(hardware)).to("USD"),
                )
            )
        options.sort(key=lambda o: o["cost"].m)
        margin = (options[1]["cost"] / options[0]["cost"]).to("").m - 1
        if margin >= MARGIN:
            break
    best = options[0]
    old, model = presets.get("model", run.model), presets.get("model", model_id)
    old_chip = presets.get("hardware", run.hardware)
    old_precision = run.get("activations", run.weights)
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    per_token = (
        get("training_flops").evaluate(
            model=run.model, training_tokens=Q_(1, "token"), presets=presets
        )
        / Q_(1, "token")
    ).to("GFLOP/token")
    for o in options:
        chip = presets.get("hardware", o["hardware"])
        o["chip"], o["flops"] = chip, chip.get(f"dense_flops_{o['precision']}")
        check = (compute / (o["flops"] * mfu) * Q_(1, "chip")).to("chip*hour")
        require(abs((check / o["hours"]).to("").m - 1) < 1e-9, "hours = FLOPs / delivered")
    reported = old.get("training_tokens")
    if run.id == "deepseek_v3_pretraining" and reported is not None:  # published as a whole run
        hours = (reported / measured * Q_(1, "chip")).to("chip*hour").m
        said = f"{number(hours / 1e6, 4)} million GPU-hours"
        published = (
            f"{old.name} ({_params(old)}) was pre-trained on {quantity(reported)} in {said} "
            f"on {number(run.chips)} {_name(old_chip)} GPUs"
        )
        backed = f"{quantity(reported)} over {said} is {quantity(measured)}"
    else:
        published = (
            f"A published run, {run.name.split(' (')[0]}, trained {old.name} ({_params(old)}) "
            f"at {quantity(measured)}"
        )
        backed = f"The run did {quantity(measured)}"

    def offer(o) -> str:
        return (
            f"{_name(o['chip'])} in {NAMES[o['precision']]} ({quantity(o['flops'])} dense, "
            f"rented at {quantity(rent(o['hardware']))})"
        )

    listed = "; ".join(offer(o) for o in sorted(options, key=lambda o: o["hardware"]))
    text = (
        f"{published}, in {NAMES[old_precision]} ({quantity(old_flops)} dense per chip). You "
        f"will pre-train {model.name} ({_params(model)}) on {quantity(tokens)} and may rent "
        f"any number of one of these: {listed}. Assume the run reaches the published run's "
        "model FLOPs utilisation of the peak of its chip and precision (counted as the "
        "lecture does, without attention's FLOPs). Which option trains it for the least "
        "money, and what is its GPU bill in USD?"
    )
    sparse = model.get("experts_routed") is not None
    old_sparse = old.get("experts_routed") is not None
    caveat = (
        f" Carrying a fine-grained MoE's MFU (its expert all-to-all holds it down) to a dense "
        f"{model.name} is pessimistic: the bill is likely smaller."
        if old_sparse and not sparse
        else f" Carrying a dense model's MFU to the MoE {model.name} is optimistic: its expert "
        "all-to-all will likely hold the MFU lower and the bill higher."
        if sparse and not old_sparse
        else ""
    )
    costs = "; ".join(
        f"{_name(o['chip'])} {NAMES[o['precision']]}: {quantity(o['hours'], 3)} × "
        f"{quantity(rent(o['hardware']))} = {quantity(o['cost'], 3)}"
        for o in options
    )
    solution = (
        f"The published run's MFU: a trained token costs six FLOPs per active parameter "
        f"(forward and backward), {quantity(per_token)} for {old.name}, so at "
        f"{quantity(old_flops)} a chip could train {quantity(bound.to('token/s/chip'))}. "
        f"{backed}: an MFU of {number(100 * mfu.m, 3)}%.",
        f"The new run: six FLOPs per active parameter per token, {quantity(compute)}"
        + (" (a token touches only the active experts)." if sparse else ".")
        + " The number of chips sets how long it takes, not the bill: the GPU-hours are the "
        f"FLOPs over what one chip delivers at {number(100 * mfu.m, 3)}% of its peak.",
        f"GPU-hours times rent, cheapest first: {costs}.",
        f"The {_name(best['chip'])} in {NAMES[best['precision']]} is cheapest, "
        f"the next costs {number(100 * margin, 2)}% more: **{quantity(best['cost'], 4)}**. "
        "With one MFU for every option the choice reduces to rent over peak: the MFU, like the "
        "FLOPs, scales every bill alike and only the bill's size depends on it." + caveat,
    )
    candidates = [
        (best["cost"] * mfu.m, "You assumed the chips run at peak; carry the published MFU over."),
    ]
    other = "fp8" if best["precision"] == "bf16" else "bf16"
    other_flops = best["chip"].get(f"dense_flops_{other}")
    listed_other = any(o["hardware"] == best["hardware"] for o in options[1:])
    if other_flops is not None and listed_other:  # the other peak is on the page
        candidates.append(
            (
                best["cost"] * best["flops"] / other_flops,
                f"You used the {NAMES[other]} peak; that option trains in "
                f"{NAMES[best['precision']]}.",
            )
        )
    if sparse:
        candidates.append(
            (
                best["cost"] * (model.params_total / model.params_active).to("").m,
                "You counted every parameter; a token passes through only the active ones.",
            )
        )
    if old.get("experts_routed") is not None:
        candidates.append(
            (
                best["cost"] / (old.params_total / old.params_active).to("").m,
                f"You counted all of {old.name}'s parameters when backing out its MFU; a token "
                "passes through only the active ones.",
            )
        )
    candidates.append(
        (
            best["cost"] / 3,
            "You counted the new run at two FLOPs per parameter, forward "
            "only, but the published one at six; count both alike.",
        )
    )
    candidates.append(
        (
            options[1]["cost"],
            "That is the runner-up's bill; compare every option's GPU-hours times its rent.",
        )
    )
    mistakes = distinct_mistakes(
        [Mistake(v, why) for v, why in candidates], best["cost"], TOLERANCE
    )
    return Draw(
        hint=(
            "The published rate per chip over what a chip could train at peak is the MFU; "
            "then each option's GPU-hours at that MFU, times its rent."
        ),
        text=text,
        answer=best["cost"],
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
        choices={"hardware": best["hardware"], "precision": best["precision"]},
        margin=margin,
    )
