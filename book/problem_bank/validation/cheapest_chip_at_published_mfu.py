"""Each chip on offer comes with its own published training run: back out each run's MFU the
way the lecture counts it (6ND over the chip's peak in the run's precision), carry it to a new
model, and price the GPU-hours. The number of chips sets only the time, not the bill; what sets
the bill is the FLOP/s each chip delivered per dollar, which no spec sheet gives."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, lands_clear, require
from book.problem_bank._rents import rent
from book.problem_bank.validation._published import NEW, published_mfu
from derivations import get
from units import Q_

KIND = "design"
TITLE = "Which chip trains it for the least money?"
USES = ("training_flops", "training_rate_bound", "model_flops_utilization", "training_time")
LECTURE = "1:18:59"

OFFERS = (  # a rentable chip, with a published run of its own (one per chip)
    "mlperf_train_h200_x1024_llama31_405b",
    "mlperf_train_gb200_x2560_llama31_405b",
    "mlperf_train_gb300_x512_llama31_405b",
    "deepseek_v3_pretraining",
    "llama3_405b_pretraining",  # a stated MFU, no rate
)
OFFERED = 3  # options on the shopping list
TOLERANCE = 0.02  # the answer is computed from each MFU at the three figures shown
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


def _run(run_id, presets):
    """A published run's chip, precision, peak and MFU (backed out of its rate, or as stated)."""
    run = presets.get("measurement", run_id)
    precision = run.get("activations", run.weights)
    if run.get("throughput_per_chip") is None:
        chip = presets.get("hardware", run.hardware)
        peak = chip.get(f"dense_flops_{precision}")
        return dict(run=run, precision=precision, peak=peak, measured=None, mfu=run.mfu)
    peak, measured, bound, mfu = published_mfu(run, presets)
    return dict(run=run, precision=precision, peak=peak, measured=measured, bound=bound, mfu=mfu)


def draw(rng, presets) -> Draw:
    while True:
        model_id, token_choices = rng.choice(NEW)
        tokens = Q_(rng.choice(token_choices), "Ttoken").to("token")
        options = []
        for run_id in rng.sample(OFFERS, OFFERED):
            o = _run(run_id, presets)
            if o["run"].model == model_id:
                break  # the run would give the new model's own rate: no MFU to carry
            hardware = o["run"].hardware
            one = Q_(1, "chip")
            time = get("training_time").evaluate(
                model=model_id,
                training_tokens=tokens,
                mfu=o["mfu"],
                hardware=hardware,
                precision=o["precision"],
                training_chips=one,
                presets=presets,
            )
            o["hardware"], o["hours"] = hardware, (time * one).to("chip*hour")
            o["cost"] = (o["hours"] * rent(hardware)).to("USD")
            o["chip"] = presets.get("hardware", hardware)
            options.append(o)
        if len(options) < OFFERED:
            continue
        options.sort(key=lambda o: o["cost"].m)
        margin = (options[1]["cost"] / options[0]["cost"]).to("").m - 1
        if margin >= MARGIN:
            break
    best = options[0]
    model = presets.get("model", model_id)
    compute = (
        get("training_flops")
        .evaluate(model=model_id, training_tokens=tokens, presets=presets)
        .to("FLOP")
    )
    for o in options:
        check = (compute / (o["peak"] * o["mfu"]) * Q_(1, "chip")).to("chip*hour")
        require(abs((check / o["hours"]).to("").m - 1) < 1e-9, "hours = FLOPs / delivered")
        o["delivered"] = (o["peak"] * o["mfu"]).to("TFLOP/s")

    def offer(o) -> str:
        run, old = o["run"], presets.get("model", o["run"].model)
        chip = f"{_name(o['chip'])}, rented at {quantity(rent(o['hardware']))}"
        peak = f"{quantity(o['peak'])} dense in {NAMES[o['precision']]}"
        if o["measured"] is None:
            low, high = (number(100 * run.get(k).m, 2) for k in ("mfu_low", "mfu_high"))
            return (
                f"{chip} ({peak}): {old.name} ({_params(old)}) was pre-trained on it in "
                f"{NAMES[o['precision']]} at a stated MFU of {low}-{high}% (take the "
                f"midpoint, {number(100 * o['mfu'].m, 3)}%)"
            )
        return (
            f"{chip} ({peak}): in the published run “{run.name}”, {old.name} "
            f"({_params(old)}) trained in {NAMES[o['precision']]} at {quantity(o['measured'])}"
        )

    listed = "\n".join(f"- {offer(o)};" for o in sorted(options, key=lambda o: o["hardware"]))
    text = (
        f"You will pre-train {model.name} ({_params(model)}) on {quantity(tokens)} and may rent "
        "any number of one of these chips, each with a published training run of its own:\n\n"
        f"{listed[:-1]}.\n\nAssume your run reaches, on each chip, the model FLOPs utilisation its "
        "published run did, of the peak of that run's precision (counted as the lecture does, "
        "without attention's FLOPs). On the chip that trains it for the least "
        "money, what is the GPU bill? Answer in USD."
    )
    sparse = model.get("experts_routed") is not None

    def backed(o) -> str:
        old = presets.get("model", o["run"].model)
        name = f"{_name(o['chip'])} {NAMES[o['precision']]}"
        if o["measured"] is None:
            return f"{name}: stated, {number(100 * o['mfu'].m, 3)}%"
        per_token = (o["bound"] * Q_(1, "chip")).to("token/s")
        return (
            f"{name}: {quantity(o['measured'])} against the "
            f"{quantity(per_token.to('token/s') / Q_(1, 'chip'))} its peak could train of "
            f"{old.name}, {number(100 * o['mfu'].m, 3)}%"
        )

    costs = "; ".join(
        f"{_name(o['chip'])}: {quantity(o['hours'], 3)} × "
        f"{quantity(rent(o['hardware']))} = {quantity(o['cost'], 3)}"
        for o in options
    )
    delivered = ", ".join(f"{_name(o['chip'])} {quantity(o['delivered'], 3)}" for o in options)
    solution = (
        "Each run's MFU: a trained token costs six FLOPs per active parameter (forward and "
        "backward), so a chip's peak trains at most peak / 6N tokens a second; the measured "
        "rate over that is the MFU. " + "; ".join(backed(o) for o in options) + ".",
        f"The new run: six FLOPs per active parameter per token, {quantity(compute)}"
        + (" (a token touches only the active experts)." if sparse else ".")
        + " The number of chips sets how long it takes, not the bill: the GPU-hours are the "
        "FLOPs over what one chip delivers, its peak times its MFU: " + delivered + ".",
        f"GPU-hours times rent, cheapest first: {costs}.",
        f"The {_name(best['chip'])} is cheapest, the next costs {number(100 * margin, 2)}% "
        f"more: **{quantity(best['cost'], 4)}**. What ranks the chips is the FLOP/s each "
        "delivered per dollar of rent, not its peak or its MFU alone: a low MFU on a fast "
        "precision can still deliver more. The estimate carries each MFU to another model and "
        "cluster size; a run's MFU moves with both (a mixture of experts' all-to-all holds it "
        "down, a larger model's bigger matrices lift it), so treat a margin of a few tens of "
        "percent as the real resolution.",
    )

    def cheapest(mfu_scale):
        """The least bill had each option's MFU been scaled by ``mfu_scale(option)``: a slip
        rerun through the choice."""
        return min(o["cost"] / mfu_scale(o) for o in options)

    candidates = [
        (
            cheapest(lambda o: 1 / o["mfu"].m),
            "You assumed the chips run at peak; carry each published MFU over.",
        ),
    ]
    if sparse:
        candidates.append(
            (
                best["cost"] * (model.params_total / model.params_active).to("").m,
                "You counted every parameter; a token passes through only the active ones.",
            )
        )

    def sparsity(o) -> float:
        """Total over active parameters of an option's published model, where its MFU is
        backed out of a rate (a stated MFU has no count to slip)."""
        old = presets.get("model", o["run"].model)
        if old.get("experts_routed") is None or o["measured"] is None:
            return 1.0
        return (old.params_total / old.params_active).to("").m

    if any(sparsity(o) > 1 for o in options):
        candidates.append(
            (
                cheapest(sparsity),
                "You counted all of a mixture of experts' parameters when backing out its "
                "published run's MFU; a token passes through only the active ones.",
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
    # every slip, rerun through the choice: inside the window, or twice it away and named
    require(
        all(lands_clear(v, best["cost"], TOLERANCE) for v, _ in candidates),
        "no slip lands just outside the window",
    )
    mistakes = distinct_mistakes(
        [Mistake(v, why) for v, why in candidates], best["cost"], TOLERANCE
    )
    return Draw(
        hint=(
            "Each chip's published rate over what its peak could train is its MFU; then each "
            "option's GPU-hours at its own MFU, times its rent."
        ),
        text=text,
        answer=best["cost"],
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
        choices={"hardware": best["hardware"], "precision": best["precision"]},
        margin=margin,
    )
