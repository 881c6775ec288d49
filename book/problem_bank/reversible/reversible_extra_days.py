"""Reversibility is paid in compute: one more forward pass. How many more days of training?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "What a reversible network costs in days"
USES = ("training_flops", "revnet_training_flops", "training_time")
LECTURE = "2:04:02"

MODELS = (
    ("deepseek_v3", None),
    ("kimi_k2", None),
    ("llama_3_1_70b", (15,)),
    ("llama_3_1_405b", (15,)),
)
CHIPS = ("h100_sxm", "b200", "gb200_nvl72")
GPUS = (2048, 4096, 8192, 16384)
MFUS = (0.35, 0.4, 0.45)


def draw(rng, presets) -> Draw:
    model_id, token_choices = rng.choice(MODELS)
    model = presets.get("model", model_id)
    tokens = (
        model.training_tokens
        if token_choices is None
        else Q_(rng.choice(token_choices), "Ttoken").to("token")
    )
    hardware = rng.choice(CHIPS)
    gpus, mfu = Q_(rng.choice(GPUS), "chip"), Q_(rng.choice(MFUS), "")
    chip = presets.get("hardware", hardware)
    case = dict(model=model_id, training_tokens=tokens, presets=presets)
    plain = get("training_flops").evaluate(**case).to("FLOP")
    rev = get("revnet_training_flops").evaluate(**case).to("FLOP")
    timing = dict(hardware=hardware, precision="bf16", training_chips=gpus, mfu=mfu, **case)
    base = get("training_time").evaluate(**timing).to("day")
    longer = get("training_time").evaluate(training_flops=rev, **timing).to("day")
    extra = (longer - base).to("day")
    peak = chip.get("dense_flops_bf16")
    work = model.params_active * tokens  # FLOPs per active parameter per token, from the bills:
    train = (plain / work).to("FLOP/parameter/token")  # forward and backward
    revnet = (rev / work).to("FLOP/parameter/token")  # and one more forward pass
    forward = revnet - train
    trn, rvn, fwd, bwd = (number(q.m) for q in (train, revnet, forward, train - forward))
    moe = (model.params_total / model.params_active).to("").m > 1.5
    params = (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
        if moe
        else quantity(model.params_total)
    )
    name = chip.name.replace(" (per GPU)", "")
    text = (
        f"A lab pre-trains {model.name} ({params}) on {quantity(tokens)} in BF16 on "
        f"{int(gpus.m):,} {name} GPUs ({quantity(peak)} dense at BF16), at "
        f"{number(100 * mfu.m)}% MFU. To train with far less activation memory it considers "
        "making every layer reversible, rebuilding each layer's input from its output during "
        "the backward pass. At the same MFU, how many extra days would the run take? Ignore "
        "attention FLOPs."
    )
    solution = (
        f"Ordinary training costs {trn} FLOP per active parameter per token: "
        f"{quantity(plain)}, which the cluster ({int(gpus.m):,} × {quantity(peak)} × "
        f"{number(100 * mfu.m)}%) does in {quantity(base)}.",
        "Rebuilding a layer's input means evaluating the layer once more on the way back: one "
        f"extra forward pass, {fwd} FLOP per active parameter per token, {rvn} in all, a third "
        f"more: {quantity(rev)}, {quantity(longer)}.",
        f"The difference is **{quantity(extra, 3)}**.",
    )
    mistakes = [
        Mistake(
            (extra * train / forward).to("day"),
            f"You counted a whole extra training pass ({trn} FLOP per parameter); "
            f"the rebuild is one forward pass, {fwd}.",
        ),
        Mistake(longer, "That is the whole reversible run; the question asks for the extra days."),
        Mistake(
            (extra * (train - forward) / forward).to("day"),
            f"You added a backward pass ({bwd} FLOP per parameter); the rebuild runs each "
            f"layer forward once more, {fwd}.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                (extra * model.params_total / model.params_active).to("day"),
                "You counted every parameter; a token runs through the active ones only.",
            )
        )
    return Draw(
        text=text,
        answer=extra,
        solution=solution,
        tolerance=0.02,
        mistakes=tuple(m for m in mistakes if abs((m.value / extra).to("").m - 1) > 0.02),
        hint="How many FLOP per parameter per token does one extra forward pass add?",
    )
