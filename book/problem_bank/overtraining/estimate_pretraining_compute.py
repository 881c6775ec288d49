"""Order of magnitude: a cluster's reservation sets a FLOP budget; how big a compute-optimal
model does it train? The GPUs' time first, then training's FLOPs per token and Chinchilla's
tokens per parameter.

The budget is GPU time, not a run's N and D (reader 26: from a run's 6 N D the 6 cancelled, so
the lesson's slip, 2N for 6N, went untested): here a student who counts the forward pass only
sizes the model √3 too large, outside the window's square."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require, shown
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "estimate"
TITLE = "The compute-optimal model a cluster's reservation can train"
USES = ("training_time", "training_flops", "chinchilla_tokens")
LECTURE = "1:18:59"

CHIPS = ("h100_sxm", "h200", "b200", "mi300x", "mi355x", "gb200_nvl72")
GPUS = (1024, 2048, 4096, 8192, 16384, 24576)
DAYS = (30, 45, 60, 90)
# The GPUs' sustained rate is given (their MFU times the peak, as a lab measures it on its last
# run), not the MFU and the peak: an MFU left out sizes the model 1/√MFU too large, within a
# factor 1.25 of the forward-only slip's √3 at any MFU a lab reaches, so one value would carry
# two diagnoses
MFUS = (0.3, 0.35, 0.4, 0.45)
# The two rules of thumb are recalled, and Chinchilla's is itself rounded; narrower than the
# slips, the closest of which (forward-only FLOPs) is a factor √3 off.
FACTOR = 1.25
REFERENCE = "llama_3_1_70b"  # a dense model whose 6 N D gives the FLOPs per parameter-token


def draw(rng, presets) -> Draw:
    hardware = rng.choice(CHIPS)
    chip = presets.get("hardware", hardware)
    gpus = Q_(rng.choice(GPUS), "chip")
    days = Q_(rng.choice(DAYS), "day")
    mfu = Q_(rng.choice(MFUS), "")
    peak = chip.dense_flops_bf16.to("TFLOP/s")
    sustained = shown((peak * mfu).to("TFLOP/s"), 3)  # as the statement prints it
    # the budget: the training time's equation solved for the FLOPs, C = n F u T
    budget = (gpus * sustained / Q_(1, "chip") * days).to("FLOP")
    time = get("training_time").evaluate(
        training_flops=budget, training_chips=gpus, flops=sustained, mfu=Q_(1, ""), presets=presets
    )
    require(abs((time / days).to("").m - 1) < 1e-6, "the budget fills the reservation")
    model = presets.get("model", REFERENCE)
    tokens = Q_(1, "Ttoken").to("token")
    reference = get("training_flops").evaluate(
        model=REFERENCE, training_tokens=tokens, presets=presets
    )
    training = (reference / (model.params_active * tokens)).to("FLOP/parameter/token")  # 6
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # 2
    per_param = (
        get("chinchilla_tokens").evaluate(n_active=model.params_active, presets=presets)
        / model.params_active
    ).to("token/parameter")  # Chinchilla's 20
    # C = 6 N' D' with D' = 20 N': N' = √(C / (6 × 20))
    bigger = ((budget / (training * per_param)) ** 0.5).to("Gparam")
    bigger_tokens = (per_param * bigger).to("Ttoken")
    require(Q_(10, "Gparam") <= bigger <= Q_(5, "Tparam"), "a model a lab would train")

    name = chip.name.split(" (")[0]
    text = (
        f"A lab reserves {number(gpus.m)} {name} GPUs for {quantity(days)}. On its last run "
        f"each GPU sustained {quantity(sustained, 3)} of model FLOPs in BF16 (its MFU times "
        "its peak), and this run will too. It spends the whole reservation on one dense, "
        "compute-optimal (Chinchilla) model. About how many parameters should that model "
        f"have? Ignore attention; any answer within a factor of {number(FACTOR)} is accepted."
    )
    seconds = days.to("s")
    solution = (
        f"The budget: {number(gpus.m)} GPUs × {quantity(sustained, 3)} × "
        f"{quantity(days)} ({quantity(seconds, 3)}) = {quantity(budget, 3)}.",
        f"Training costs {number(training.m)} FLOP per parameter per token (forward "
        f"{number(forward.m)}, backward twice that), and a compute-optimal model of N′ "
        f"parameters trains on {quantity(per_param)}, so it spends {number(training.m)} × N′ × "
        f"{number(per_param.m)} N′ = {number((training * per_param).m)} N′² FLOPs.",
        f"Set that equal to the budget: N′ = √({quantity(budget, 3)} / "
        f"{number((training * per_param).m)}) ≈ **{quantity(bigger, 3)}**, trained on "
        f"{quantity(bigger_tokens, 3)}. (A lab that over-trains instead spends the same budget "
        "on a smaller model and more tokens, for cheaper serving.)",
    )

    def sized(flops):
        """The model a student sizes from a budget of ``flops`` at 6 × 20 N′²."""
        return ((flops / (training * per_param)) ** 0.5).to("Gparam")

    candidates = [
        (
            ((budget / (forward * per_param)) ** 0.5).to("Gparam"),
            f"You counted {number(forward.m)} FLOP per parameter per token, the forward pass "
            f"only; training costs {number(training.m)} (the backward pass twice the forward).",
        ),
        (
            sized(budget * training.m),  # N′ = √(C / 20)
            f"You left the {number(training.m)} FLOP per parameter per token out of the "
            "model's budget: each of its tokens costs that many per parameter.",
        ),
        (
            sized(budget / gpus.m),
            f"You sized the model for one GPU's time; the budget is all {number(gpus.m)} of them.",
        ),
    ]
    for value, _ in candidates:  # every named slip outside the window's square
        ratio = (value / bigger).to("").m
        require(max(ratio, 1 / ratio) >= FACTOR**2, "each slip lands outside the square")
    mistakes = [Mistake(v, why) for v, why in candidates]
    return Draw(
        text=text,
        answer=bigger,
        solution=solution,
        tolerance=FACTOR,
        mistakes=distinct_mistakes(mistakes, bigger, FACTOR, factor=True),
        hint="The reservation's FLOPs first (what the GPUs sustain, for how long); then what a "
        "model of N′ parameters spends when trained on Chinchilla's tokens per parameter: a "
        "multiple of N′².",
    )
