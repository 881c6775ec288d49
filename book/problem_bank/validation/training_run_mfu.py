"""A published training run's throughput, read as a model FLOPs utilisation."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "numeric"  # one formula, worked in steps
TITLE = "The MFU of a published training run"
USES = ("training_flops", "training_rate_bound", "model_flops_utilization")

RUNS = (
    "maxtext_v6e_llama31_70b",
    "maxtext_v6e_llama31_405b",
    "maxtext_v5p_llama2_70b",
    "mlperf_train_h200_x1024_llama31_405b",
    "deepseek_v3_pretraining",
)
NAMES = {"bf16": "BF16", "fp8": "FP8"}


def pct(x: float) -> str:
    return f"{number(100 * x, 3)}%"


def draw(rng, presets) -> Draw:
    run = presets.get("measurement", rng.choice(RUNS))
    chip = presets.get("hardware", run.hardware)
    model = presets.get("model", run.model)
    precision = run.get("activations", run.weights)
    flops = chip.get(f"dense_flops_{precision}")
    chips = Q_(run.chips, "chip")
    measured = (run.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    total = (measured * chips).to("token/s")

    bound = get("training_rate_bound").evaluate_detailed(
        hardware=run.hardware, model=run.model, flops=flops, presets=presets
    )
    counted = get("training_flops").evaluate_detailed(
        model=run.model, training_tokens=Q_(1, "token"), presets=presets
    )
    per_token = (counted.value / Q_(1, "token")).to("GFLOP/token")
    forward = counted.inputs["flops_per_param_token"].value
    bound = bound.value.to("token/s/chip")
    mfu = get("model_flops_utilization").evaluate(
        measured_rate=measured, training_rate_bound=bound, presets=presets
    )
    mfu = mfu.to("")

    sparse = model.get("experts_routed") is not None
    size = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if sparse
        else quantity(model.params_total)
    )
    peaks = " and ".join(
        f"{quantity(chip.get(f'dense_flops_{p}'))} in {NAMES[p]}"
        for p in ("bf16", "fp8")
        if chip.get(f"dense_flops_{p}") is not None
    )
    text = (
        f"A published pre-training run: {model.name} ({size}), trained in {NAMES[precision]} "
        f"on {number(chips.m)} {chip.name.split(' (')[0]} chips, whose dense peak is {peaks} "
        "per chip. "
        f"The whole cluster processed {quantity(total)}. Counting the model's FLOPs as the "
        "lecture does (no attention), what fraction of peak did the run use?"
    )
    active = "active " if sparse else ""
    solution = (
        f"Per chip: {quantity(total)} over {quantity(chips)} is {quantity(measured)}.",
        f"A forward pass costs {number(forward.m)} FLOPs per {active}parameter per token and "
        f"the backward pass twice that: {quantity(per_token)}"
        + (", counting only the parameters a token is routed through." if sparse else "."),
        f"At its {NAMES[precision]} peak of {quantity(flops)}, a chip could train at most "
        f"{quantity(flops)} / {quantity(per_token)} = {quantity(bound)}.",
        (
            f"The publisher states {pct(run.mfu.to('').m)}, counting attention's FLOPs too; "
            "by the lecture's count the run's share of peak is "
            if run.get("mfu") is not None
            else "The run's share of peak is "
        )
        + f"{quantity(measured)} / {quantity(bound)} = **{pct(mfu.m)}** "
        f"(the figures are those published for {run.name}).",
    )
    candidates = [
        (
            mfu / 3,
            "You counted two FLOPs per parameter, a forward pass only; training does a "
            "backward pass too, six in all.",
        ),
        (
            mfu * chips.m,
            "You divided the whole cluster's throughput by one chip's peak; "
            "divide by every chip's.",
        ),
    ]
    if sparse:
        ratio = (model.params_total / model.params_active).to("").m
        candidates.append(
            (
                mfu * ratio,
                "You counted every parameter; a token passes through only the active ones.",
            )
        )
    other = [p for p in ("bf16", "fp8") if p != precision and chip.get(f"dense_flops_{p}")]
    for p in other:
        factor = (flops / chip.get(f"dense_flops_{p}")).to("").m
        candidates.append(
            (
                mfu * factor,
                f"You held the run against the {NAMES[p]} peak; it computed in {NAMES[precision]}.",
            )
        )
    mistakes = tuple(Mistake(Q_(v.m, ""), why) for v, why in candidates)
    return Draw(
        hint=(
            "Tokens per second per chip times the FLOPs of a trained token, over the chip's "
            "peak at the run's precision."
        ),
        text=text,
        answer=mfu,
        solution=solution,
        tolerance=0.03,
        mistakes=mistakes,
    )
