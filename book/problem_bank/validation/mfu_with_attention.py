"""A published MFU counts more than the lecture's 6N: attention's FLOPs, under causal masking."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require, shown
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "Counting attention in a published MFU"
USES = ("training_rate_bound", "attention_training_rate_bound", "model_flops_utilization")

RUNS = (
    "maxtext_v6e_llama31_70b",
    "maxtext_v6e_llama31_405b",
    "maxtext_v5p_llama2_70b",
    "mlperf_train_h200_x1024_llama31_405b",
    "mlperf_train_gb200_x2560_llama31_405b",
    "mlperf_train_gb200_x5120_llama31_405b",
    "mlperf_train_gb300_x512_llama31_405b",
)
NAMES = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4"}
# the answer follows from the figures as printed (to about 0.1%); attention is only a few
# percent of a token's FLOPs at these runs' sequences, so its slips (half of it counted, the
# backward pass taken as one forward) sit 1.3-2.7% from the answer: the window is tight enough
# that each lands twice its width away (reader 21), and a run where one does not is redrawn
TOLERANCE = 0.005


def pct(x: float) -> str:
    return f"{number(100 * x, 3)}%"


def draw(rng, presets) -> Draw:
    run = presets.get("measurement", rng.choice(RUNS))
    sequence = run.context
    chip = presets.get("hardware", run.hardware)
    model = presets.get("model", run.model)
    precision = run.get("activations", run.weights)
    flops = shown(chip.get(f"dense_flops_{precision}"))  # as the statement prints them
    measured = shown((run.throughput_per_chip / Q_(1, "chip")).to("token/s/chip"))
    case = dict(hardware=run.hardware, model=run.model, flops=flops, presets=presets)

    plain = get("training_rate_bound").evaluate(**case).to("token/s/chip")
    attn = get("attention_training_rate_bound").evaluate_detailed(
        training_sequence=sequence / 2,
        **case,  # causal: a query meets half the keys, on average
    )
    forward = attn.inputs["flops_per_param_token"].value
    attn = attn.value.to("token/s/chip")
    mfu_plain = (
        get("model_flops_utilization")
        .evaluate(measured_rate=measured, training_rate_bound=plain, presets=presets)
        .to("")
    )
    mfu = (measured / attn).to("")
    token = Q_(1, "token")
    weights = (flops / plain).to("GFLOP/token")
    total = (flops / attn).to("GFLOP/token")
    extra = total - weights
    full = get("attention_training_rate_bound").evaluate(training_sequence=sequence, **case)
    mfu_full = (measured / full).to("")

    stated = run.get("mfu")
    reported = (
        f"It reports an MFU of {pct(stated.to('').m)}, counted its own way. "
        if stated is not None
        else ""
    )
    text = (
        f"{run.name.split(' Llama')[0]} publishes a run that trains {model.name} "
        f"({quantity(model.params_total)}; "
        f"{number(model.layers)} layers of {number(model.n_heads)} query heads of "
        f"{number(model.head_dim)} values) in {NAMES[precision]} on {number(run.chips)} "
        f"{chip.name.split(' (')[0]} chips ({quantity(flops)} dense in {NAMES[precision]} "
        f"each) at sequences of {quantity(sequence)}, and measures {quantity(measured)}. "
        f"{reported}Count attention's matrix products as well as the weights', with causal "
        "masking. What MFU do you get? Answer as a fraction (or a percentage, with its % sign)."
    )
    solution = (
        f"Without attention a token costs {number(forward.m)} FLOPs per parameter forward and "
        f"twice that backward: {quantity(weights * token)} per token, so the chip could train "
        f"{quantity(plain)} and the run used {pct(mfu_plain.m)} of it.",
        f"Attention adds, per token and layer, a score against each earlier token and a "
        f"weighted sum of as many values, {number(model.n_heads)} × {number(model.head_dim)} "
        f"multiply-adds each. Under causal masking a token meets half of the "
        f"{quantity(sequence)} on average, so forward and backward over "
        f"{number(model.layers)} layers that is {quantity(extra * token)} more per token.",
        f"{quantity(flops)} / {quantity(total)} = {quantity(attn)} at peak: the same run, "
        "credited with more work per token, gets a higher MFU"
        + (
            f". (The published {pct(stated.to('').m)} rests on the publisher's own count, "
            "which differs in detail, such as what it credits to the embeddings and the "
            "output layer: MFUs compare only when they count the same FLOPs.)"
            if stated is not None
            else "."
        ),
        f"{quantity(measured)} / {quantity(attn)} = **{pct(mfu.m)}**.",
    )

    def with_attention(share):
        """The MFU had attention's FLOPs been counted at ``share`` of their true count."""
        return (measured * (weights + share * extra) / flops).to("")

    mistakes = (
        Mistake(mfu_plain, "That is the lecture's count, without attention's FLOPs."),
        Mistake(
            mfu_full,
            "You let every query meet the whole sequence; under causal masking a token "
            "meets only the tokens before it, half the sequence on average.",
        ),
        Mistake(
            with_attention(1 / 3),
            "You counted attention's forward pass only; the backward pass costs twice as "
            "much again, as for the weights.",
        ),
        Mistake(
            with_attention(1 / 2),
            "You counted half of attention's FLOPs: each token runs two products per head "
            "(scores against the keys, then the weighted sum of the values), and each "
            "multiply-add is two FLOPs.",
        ),
        Mistake(
            with_attention(2 / 3),
            "You took attention's backward pass as costing one forward; like the weights', "
            "it costs two.",
        ),
    )
    # every slip lands twice the window away: a scenario where one falls between is redrawn
    require(
        all(abs((m.value / mfu).to("").m - 1) >= 2 * TOLERANCE for m in mistakes),
        "every slip on attention's count is told from the answer",
    )
    return Draw(
        hint=(
            "The run's tokens per second stay the same; only the FLOPs counted per token "
            "grow, by attention's products in every layer, forward and backward, over half "
            "the sequence on average."
        ),
        text=text,
        answer=mfu,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, mfu, TOLERANCE),
    )
