"""A published run's throughput, read as an MFU, then used to size a new run for a deadline."""

from __future__ import annotations

import math

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, clear_of_rounding, require, whole_count_tolerance
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "Sizing a new run from a published run's MFU"
USES = ("training_flops", "training_rate_bound", "model_flops_utilization", "training_time")

RUNS = (
    "maxtext_v6e_llama31_70b",
    "maxtext_v6e_llama31_405b",
    "mlperf_train_h200_x1024_llama31_405b",
    "deepseek_v3_pretraining",
)
# the new model, and its training tokens in trillions
NEW = (
    ("llama_3_1_8b", (15,)),
    ("llama_3_1_70b", (15,)),
    ("qwen3_235b_a22b", (36,)),
    ("mixtral_8x7b", (8, 12)),
    ("gpt_oss_120b", (20, 30)),
    ("kimi_k2", (15.5,)),
    ("deepseek_v3", (14.8,)),
)
DEADLINES = (30, 45, 60, 90)  # days
NAMES = {"bf16": "BF16", "fp8": "FP8"}


def pct(x: float) -> str:
    return f"{number(100 * x, 3)}%"


def params(model) -> str:
    """'671 B parameters in all, 37 B active per token', or a dense model's one count."""
    if model.get("experts_routed") is None:
        return quantity(model.params_total)
    return (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
    )


def scenario(rng, presets):
    """A run, a new model and a deadline whose chip count is clear of rounding."""
    while True:
        run = presets.get("measurement", rng.choice(RUNS))
        model_id, token_choices = rng.choice([m for m in NEW if m[0] != run.model])
        tokens = Q_(rng.choice(token_choices), "Ttoken").to("token")
        deadline = Q_(rng.choice(DEADLINES), "day")
        chip = presets.get("hardware", run.hardware)
        flops = chip.get(f"dense_flops_{run.get('activations', run.weights)}")
        measured = (run.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
        bound = (
            get("training_rate_bound")
            .evaluate(hardware=run.hardware, model=run.model, flops=flops, presets=presets)
            .to("token/s/chip")
        )
        mfu = (
            get("model_flops_utilization")
            .evaluate(measured_rate=measured, training_rate_bound=bound, presets=presets)
            .to("")
        )
        mfu = Q_(float(f"{mfu.m:.3g}"), "")  # as the solution shows it, three figures
        new = get("training_flops").evaluate(
            model=model_id, training_tokens=tokens, presets=presets
        )
        exact = (new / (flops * mfu * deadline) * Q_(1, "chip")).to("chip").m
        blocks = exact / chip.scale_up_domain.m
        if blocks >= 2 and exact <= 100_000 and clear_of_rounding(blocks):
            return run, chip, flops, measured, bound, mfu, model_id, tokens, deadline, new, exact


def draw(rng, presets) -> Draw:
    run, chip, flops, measured, bound, mfu, model_id, tokens, deadline, new, exact = scenario(
        rng, presets
    )
    precision = run.get("activations", run.weights)
    old, model = presets.get("model", run.model), presets.get("model", model_id)
    unit = int(chip.scale_up_domain.m)
    block = "server" if unit <= 8 else "pod"
    blocks = math.ceil(exact / unit)
    chips = Q_(blocks * unit, "chip")
    days = (
        get("training_time")
        .evaluate(
            hardware=run.hardware,
            model=model_id,
            precision=precision,
            training_tokens=tokens,
            training_chips=chips,
            mfu=mfu,
            presets=presets,
        )
        .to("day")
    )
    require(days <= deadline, "the rounded-up count finishes in time")
    per_token = (
        get("training_flops").evaluate(
            model=run.model, training_tokens=Q_(1, "token"), presets=presets
        )
        / Q_(1, "token")
    ).to("GFLOP/token")
    total = (measured * Q_(run.chips, "chip")).to("token/s")
    name = chip.name.split(" (")[0]

    text = (
        f"A published training run trained {old.name} ({params(old)}) in "
        f"{NAMES[precision]} on {number(run.chips)} {name} chips ({quantity(flops)} dense in "
        f"{NAMES[precision]} each), and the whole cluster processed {quantity(total)}. You "
        f"will train {model.name} ({params(model)}) on {quantity(tokens)} on the same chips, "
        f"in {NAMES[precision]}, and expect the same model FLOPs utilisation (counted as the "
        f"lecture does, without attention). The chips come in {block}s of {number(unit)}. How "
        f"many chips must you use to finish within {quantity(deadline)}?"
    )
    solution = (
        f"The run's MFU first. A trained token costs a forward pass of two FLOPs per active "
        f"parameter and a backward pass of four: {quantity(per_token)} for {old.name}. At "
        f"{quantity(flops)} a chip could train {quantity(bound)}; the run did {quantity(total)} "
        f"/ {number(run.chips)} = {quantity(measured)}, an MFU of {pct(mfu.m)}.",
        f"The new run: six FLOPs per active parameter per token, {quantity(new)}. One chip "
        f"delivers {quantity(flops)} × {pct(mfu.m)}; over {quantity(deadline)} the run needs "
        f"{number(exact)} chips, {number(exact / unit)} {block}s; rounded up (a fraction short "
        f"misses the deadline), {number(blocks)} {block}s: **{quantity(chips, 4)}**, finishing "
        f"in {quantity(days, 3)}. (A shortcut: at the same MFU a chip's tokens per second "
        "scale inversely with the active parameters, so the MFU need not be written down; it "
        "is worth knowing anyway.)",
    )
    tolerance = whole_count_tolerance(chips.m, 0.02)
    candidates = [
        (exact * mfu.m, "You left out the MFU: the chips deliver only a share of their peak."),
        (
            exact / run.chips,
            "You took the whole cluster's throughput as one chip's: divide it by the chips.",
        ),
        (exact, f"Round up to whole {block}s: a fraction short misses the deadline."),
    ]
    if model.get("experts_routed") is not None:
        candidates.append(
            (
                exact * (model.params_total / model.params_active).to("").m,
                "You counted every parameter; a token passes through the active ones only.",
            )
        )
    mistakes, seen = [], [chips.m]
    for value, why in candidates:
        whole = unit * (max(1, math.ceil(value / unit)) if "Round" not in why else 0)
        whole = whole or math.ceil(value)  # rounded to chips, not to whole blocks
        if all(abs(whole / v - 1) > tolerance for v in seen):
            mistakes.append(Mistake(Q_(whole, "chip"), why))
            seen.append(whole)
    return Draw(
        hint="The published run's tokens per second per chip, against what the chip could do, "
        "give the MFU; then the new run's FLOPs over what a chip delivers by the deadline.",
        text=text,
        answer=chips,
        solution=solution,
        tolerance=tolerance,
        mistakes=tuple(mistakes),
    )
