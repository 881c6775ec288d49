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
        f"Ordinary training costs 6 FLOP per active parameter per token: "
        f"{quantity(plain)}, which the cluster ({int(gpus.m):,} × {quantity(peak)} × "
        f"{number(100 * mfu.m)}%) does in {quantity(base)}.",
        "Rebuilding a layer's input means evaluating the layer once more on the way back: one "
        "extra forward pass, 2 FLOP per active parameter per token, 8 in all, a third more: "
        f"{quantity(rev)}, {quantity(longer)}.",
        f"The difference is **{quantity(extra)}**.",
    )
    mistakes = [
        Mistake(
            extra * 3,
            "You counted a whole extra training pass (6 FLOP per parameter); "
            "the rebuild is one forward pass, 2.",
        ),
        Mistake(longer, "That is the whole reversible run; the question asks for the extra days."),
        Mistake(
            extra * 2,
            "The rebuild runs each layer forward once more (2 FLOP per "
            "parameter), not forward and backward.",
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
