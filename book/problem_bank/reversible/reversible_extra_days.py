"""Reversibility is paid in compute, and a reported MFU hides it: the model FLOPs utilisation
counts the model's own FLOPs, so the GPUs' share of peak on every FLOP is higher, and the days
the rebuild adds are its FLOPs at that share."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, shown
from units import Q_

KIND = "multi"
TITLE = "How many days does the rebuild add, from a reported MFU?"
USES = ("training_flops", "revnet_training_flops", "training_mfu")
LECTURE = "2:04:02"

MODELS = (
    ("deepseek_v3", None),
    ("kimi_k2", None),
    ("llama_3_1_70b", (15,)),
    ("llama_3_1_405b", (15,)),
)
CHIPS = ("h100_sxm", "b200", "gb200_nvl72")
GPUS = (2048, 4096, 8192, 16384)
MFUS = (0.28, 0.3, 0.32, 0.35, 0.38, 0.4, 0.42)  # reported, of the BF16 peak
DAYS = (15, 200)  # the run's length, days: a plan a lab would make
TOLERANCE = 0.02


def draw(rng, presets) -> Draw:
    while True:  # a run of a plausible length
        model_id, token_choices = rng.choice(MODELS)
        model = presets.get("model", model_id)
        tokens = (
            model.training_tokens
            if token_choices is None
            else Q_(rng.choice(token_choices), "Ttoken").to("token")
        )
        hardware = rng.choice(CHIPS)
        gpus, mfu = Q_(rng.choice(GPUS), "chip"), rng.choice(MFUS)
        chip = presets.get("hardware", hardware)
        peak = shown(chip.get("dense_flops_bf16").to("TFLOP/s"), 4)
        case = dict(model=model_id, training_tokens=tokens, presets=presets)
        plain = evaluate("training_flops", **case).to("FLOP")  # the model's own: 6 N D
        rev = evaluate("revnet_training_flops", **case).to("FLOP")  # what the GPUs run
        rate = (gpus * peak).to("FLOP/s")
        run = (plain / (rate * mfu)).to("day")  # MFU counts the model's own FLOPs
        if DAYS[0] <= run.m <= DAYS[1]:
            break
    share = (mfu * rev / plain).to("").m  # of peak on every FLOP the GPUs run
    without = (plain / (rate * share)).to("day")  # the same share, no rebuild
    extra = (run - without).to("day")
    work = model.params_active * tokens
    trn, rvn = (number((q / work).to("FLOP/parameter/token").m) for q in (plain, rev))
    fwd = number(((rev - plain) / work).to("FLOP/parameter/token").m)
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    name = chip.name.replace(" (per GPU)", "")
    text = (
        f"A lab will pre-train {model.name} ({params}) on {quantity(tokens)} in BF16 on "
        f"{int(gpus.m):,} {name} GPUs ({quantity(peak)} dense at BF16). To train with far less "
        "activation memory it makes every layer reversible: during the backward pass each "
        "layer's input is rebuilt once from its output, and nothing else is recomputed. A "
        "pilot of the same run reports a model FLOPs utilisation (MFU) of "
        f"{number(100 * mfu)}% of the BF16 peak. Ignoring attention FLOPs, how many days does "
        "the rebuilding add to the run, against the same run without the rebuild (had its "
        "activations fit) at the same hardware FLOPs utilisation (HFU: the share of peak on "
        "every FLOP the GPUs execute)? Answer in days."
    )
    solution = (
        f"MFU counts the model's own FLOPs: {trn} per active parameter per token, forward and "
        f"backward. The GPUs also run the rebuild, one more forward pass, {fwd}: {rvn} in all. "
        f"So on every FLOP they run they sustain {number(100 * mfu)}% × {rvn}/{trn} = "
        f"{number(100 * share, 3)}% of peak: the hardware FLOPs utilisation (HFU), which "
        "counts the recompute that MFU leaves out.",
        f"The run: {trn} × {quantity(model.params_active)} × {quantity(tokens)} = "
        f"{quantity(plain)}, the model's own, over {int(gpus.m):,} × {quantity(peak)} × "
        f"{number(100 * mfu)}%: {quantity(run, 3)}.",
        f"Without the rebuild, the same {quantity(plain)} at {number(100 * share, 3)}% of peak "
        f"take {quantity(without, 3)}.",
        f"The rebuild adds {quantity(run, 3)} − {quantity(without, 3)} = "
        f"**{quantity(extra, 3)}**: its {fwd} FLOP per parameter per token at "
        f"{number(100 * share, 3)}% of peak, a quarter of the run. A reported MFU already has "
        "the recompute's cost in it: the run takes the model's FLOPs over the MFU, not the "
        "recompute added on top.",
    )
    rebuild = (rev - plain).to("FLOP")
    mistakes = [
        Mistake(
            (rebuild / (rate * mfu)).to("day"),
            f"You ran the rebuild at the MFU, {number(100 * mfu)}%; MFU leaves the rebuild's "
            f"FLOPs out, so the GPUs run every FLOP at {number(100 * share, 3)}% of peak.",
        ),
        Mistake(
            run,
            "That is the whole run; the question asks how many days of it the rebuild takes.",
        ),
        Mistake(
            without,
            "That is the run without the rebuild; the question asks for the difference.",
        ),
        Mistake(
            extra * chip.get("dense_flops_bf16") / chip.get("dense_flops_fp8"),
            "You divided by the FP8 peak; the run trains in BF16.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                extra * model.params_total / model.params_active,
                "You counted every parameter; a token runs through the active ones only.",
            )
        )
    return Draw(
        text=text,
        answer=extra,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, extra, TOLERANCE),
        hint="What does MFU count, and what do the GPUs actually run? Find their share of peak "
        "on every FLOP, then time the rebuild's FLOPs at it.",
    )
