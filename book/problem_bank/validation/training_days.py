"""A published run's utilisation, backed out with 6ND, carried to another model on another
cluster: roughly how many days will that run take?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from book.problem_bank.validation._published import NEW, RUNS, published_mfu
from derivations import get
from units import Q_

KIND = "estimate"
TITLE = "How many days will the pre-training take?"
USES = ("training_flops", "training_rate_bound", "model_flops_utilization", "training_time")
LECTURE = "1:18:59"

CLUSTERS = (  # the new run's chip and precision
    ("h100_sxm", "bf16"),
    ("h100_sxm", "fp8"),
    ("b200", "bf16"),
    ("b200", "fp8"),
    ("gb200_nvl72", "fp8"),
    ("mi355x", "fp8"),
    ("tpu_v6e", "bf16"),
)
CHIPS = (1024, 2048, 4096, 8192, 16_384)
FACTOR = 1.5  # graded within ×1.5: a precision's peak for another's (×2) falls outside
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
        hardware, precision = rng.choice([c for c in CLUSTERS if c[0] != run.hardware])
        chips = Q_(rng.choice(CHIPS), "chip")
        tokens = Q_(rng.choice(token_choices), "Ttoken").to("token")
        old_chip, chip = presets.get("hardware", run.hardware), presets.get("hardware", hardware)
        old_precision = run.get("activations", run.weights)
        flops = chip.get(f"dense_flops_{precision}")
        old_flops, measured, bound, mfu = published_mfu(run, presets)  # as the solution shows it
        days = (
            get("training_time")
            .evaluate(
                hardware=hardware,
                model=model_id,
                precision=precision,
                training_tokens=tokens,
                training_chips=chips,
                mfu=mfu,
                presets=presets,
            )
            .to("day")
        )
        if Q_(7, "day") <= days <= Q_(365, "day"):  # a pre-training run, not an afternoon
            break
    old, model = presets.get("model", run.model), presets.get("model", model_id)
    per_token = (
        get("training_flops").evaluate(
            model=run.model, training_tokens=Q_(1, "token"), presets=presets
        )
        / Q_(1, "token")
    ).to("GFLOP/token")
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    delivered = (chips * flops * mfu / Q_(1, "chip")).to("EFLOP/s")
    require(abs((compute / delivered / days).to("").m - 1) < 1e-9, "days = FLOPs / delivered")
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
    text = (
        f"{published}, in {NAMES[old_precision]} ({quantity(old_flops)} dense per chip). You "
        f"will pre-train {model.name} ({_params(model)}) on {quantity(tokens)} on "
        f"{number(chips.m)} {_name(chip)} chips in {NAMES[precision]} ({quantity(flops)} dense "
        "each), expecting the published run's model FLOPs utilisation (counted as the "
        "lecture does, without attention's FLOPs). Roughly how many days will it take?"
    )
    sparse = model.get("experts_routed") is not None
    solution = (
        f"The published run's MFU: a trained token costs six FLOPs per active parameter "
        f"(forward and backward), {quantity(per_token)} for {old.name}, so at "
        f"{quantity(old_flops)} a chip could train {quantity(bound.to('token/s/chip'))}. "
        f"{backed}: an MFU of {number(100 * mfu.m, 3)}%"
        + (
            ", far below the roofline: real runs lose the rest to communication, memory "
            "traffic and kernels that do not reach peak."
            if mfu.m < 0.5
            else "."
        ),
        f"The new run: six FLOPs per active parameter per token, {quantity(compute, 2)}"
        + (" (a token touches only the active experts)." if sparse else ".")
        + f" The cluster delivers {number(chips.m)} × {quantity(flops)} × "
        f"{number(100 * mfu.m, 3)}% ≈ {quantity(delivered, 2)}.",
        f"{quantity(compute, 2)} over that is about **{quantity(days, 2)}**.",
    )
    other = "fp8" if precision == "bf16" else "bf16"
    candidates = [
        (days * mfu.m, "You assumed the chips run at peak; carry the published run's MFU over."),
    ]
    if chip.get(f"dense_flops_{other}") is not None:
        candidates.append(
            (
                days * flops / chip.get(f"dense_flops_{other}"),
                f"You used the {NAMES[other]} peak; the new run trains in {NAMES[precision]}.",
            )
        )
    if old_precision != precision and old_chip.get(f"dense_flops_{precision}") is not None:
        candidates.append(
            (
                days * old_flops / old_chip.get(f"dense_flops_{precision}"),
                "You read the published run's MFU against the peak of the new run's precision; "
                f"it trained in {NAMES[old_precision]}.",
            )
        )
    if sparse:
        candidates.append(
            (
                days * (model.params_total / model.params_active).to("").m,
                "You counted every parameter; a token passes through only the active ones.",
            )
        )
    if old.get("experts_routed") is not None:
        candidates.append(
            (
                days / (old.params_total / old.params_active).to("").m,
                f"You counted all of {old.name}'s parameters when backing out its MFU; a token "
                "passes through only the active ones.",
            )
        )
    candidates.append(
        (
            days / 3,
            "You counted the new run at two FLOPs per parameter, forward "
            "only, but the published one at six; count both alike.",
        )
    )
    outside = [Mistake(v, why) for v, why in candidates if not 1 / FACTOR <= v / days <= FACTOR]
    mistakes = distinct_mistakes(outside, days, FACTOR, factor=True)  # one slip per value
    return Draw(
        hint=(
            "The published rate per chip over what a chip could train at peak is the MFU; "
            "then the new run's FLOPs over what its cluster delivers at that MFU."
        ),
        text=text,
        answer=days,
        solution=solution,
        tolerance=FACTOR,
        mistakes=mistakes,
    )
