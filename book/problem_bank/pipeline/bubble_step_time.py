"""A training step pays for the pipeline's fill and drain: how long does one step take?"""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "The length of a pipelined training step"
USES = ("training_flops", "training_time", "pipeline_bubble_fraction")
LECTURE = "47:12"

MODELS = ("llama_3_1_70b", "llama_3_1_405b", "deepseek_v3", "qwen3_235b_a22b")
CHIPS = ("h100_sxm", "b200", "gb200_nvl72")
GPUS = (1024, 2048, 4096, 8192)
STAGES = (4, 8, 16)
MICROBATCHES = (8, 16, 32, 64)
SEQUENCES = (512, 1024, 2048)
CONTEXTS = (4096, 8192)
MFUS = (0.35, 0.4, 0.45, 0.5)
WIDTHS = (8, 4, 2)  # GPUs per pipeline stage (tensor and expert parallel within a node)


def _layout(gpus: int, stages: int, micro: int, sequences: int):
    """GPUs per stage (a node or less) for which every replica's micro-batches are whole
    sequences: (GPUs per stage, replicas, sequences per replica), or None."""
    for width in WIDTHS:
        replicas, rest = divmod(gpus, stages * width)
        if rest or not replicas or sequences % replicas:
            continue
        share = sequences // replicas
        if share >= micro and share % micro == 0:
            return width, replicas, share
    return None


def draw(rng, presets) -> Draw:
    while True:  # a layout whose micro-batches hold whole sequences
        model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
        gpus = Q_(rng.choice(GPUS), "chip")
        stages = rng.choice(STAGES)
        micro = rng.choice([m for m in MICROBATCHES if m >= 2 * stages])  # a sane schedule
        sequences, context = rng.choice(SEQUENCES), Q_(rng.choice(CONTEXTS), "token/sequence")
        layout = _layout(int(gpus.m), stages, micro, sequences)
        if layout:
            width, replicas, share = layout
            break
    mfu = Q_(rng.choice(MFUS), "")
    tokens = (Q_(sequences, "sequence") * context).to("token")
    model, chip = presets.get("model", model_id), presets.get("hardware", hardware)
    case = dict(hardware=hardware, model=model_id, precision="bf16", presets=presets)

    flops_step = get("training_flops").evaluate(training_tokens=tokens, **case).to("FLOP")
    detail = get("training_time").evaluate_detailed(
        training_tokens=tokens, training_chips=gpus, mfu=mfu, **case
    )
    busy = detail.value.to("s")
    peak = detail.inputs["flops"].value
    bubble = (
        get("pipeline_bubble_fraction")
        .evaluate(pipeline_stages=Q_(stages, "stage"), microbatches=micro, presets=presets)
        .to("")
    )
    step = (busy / (1 - bubble)).to("s")
    n_active, n_total = model.params_active, model.params_total
    per_token = (flops_step / (n_active * tokens)).to("FLOP/parameter/token")  # forward + backward
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    backward = per_token - forward
    moe = (n_total / n_active).to("").m > 1.5
    params = (
        f"{quantity(n_total)} in all, {quantity(n_active)} active per token"
        if moe
        else quantity(n_total)
    )
    chip_name = chip.name.replace(" (per GPU)", "")

    layers = int(model.layers)
    balanced = (
        f" (take the stages as balanced, each doing an equal share of the work, though "
        f"{layers} layers do not split evenly over {stages})"
        if layers % stages
        else f" ({layers // stages} of its {layers} layers each)"
    )
    text = (
        f"You pre-train {model.name} ({params}) on {int(gpus.m):,} {chip_name} GPUs, "
        f"{quantity(peak)} each at BF16. Each step trains on {sequences:,} sequences of "
        f"{context_tokens(context)}. The layers are pipelined over {stages} stages of {width} "
        f"GPUs each{balanced}, so there are {replicas:,} data-parallel replicas, and each "
        f"replica splits its {share:,} sequences into {micro} micro-batches of "
        f"{quantity(Q_(share // micro, 'sequence'))}, run "
        "one after another through the stages with a fill-and-drain schedule. While a GPU is "
        f"busy it reaches {number(100 * mfu.m)}% of its peak (attention FLOPs ignored). How long "
        "does one training step take? Answer in seconds."
    )
    solution = (
        f"A step's tokens: {sequences:,} × {context_tokens(context)} = {quantity(tokens)}. "
        f"Training costs {number(per_token.m)} FLOP per active parameter per token "
        f"({number(forward.m)} forward, {number(backward.m)} backward), so the step needs "
        f"{number(per_token.m)} × {quantity(n_active)} × {quantity(tokens)} = "
        f"{quantity(flops_step)}"
        + (" (only the active parameters work on a token)." if moe else "."),
        f"Busy, the cluster delivers {int(gpus.m):,} × {quantity(peak)} × "
        f"{number(100 * mfu.m)}%, so the work itself takes {quantity(busy)}.",
        f"The pipeline fills and drains: with {stages} stages and {micro} micro-batches each "
        f"stage idles for {stages - 1} of every {micro + stages - 1} slots, a bubble of "
        f"{number(100 * bubble.m, 3)}%.",
        f"The step is the busy time over the busy share: {quantity(busy)} / "
        f"(1 − {number(bubble.m, 3)}) = **{quantity(step)}**.",
    )
    mistakes = [
        Mistake(
            (step * forward / per_token).to("s"),
            f"You counted {number(forward.m)} FLOP per parameter per token; training runs the "
            f"backward pass too, {number(per_token.m)} in all.",
        ),
        Mistake(
            busy,
            "You left out the pipeline bubble: the stages wait while the pipeline "
            "fills and drains every step.",
        ),
        Mistake(
            (busy * (1 + (stages - 1) / (micro + stages - 1))).to("s"),
            "You added the bubble's share of the step to the busy time; the bubble is a "
            "share of the whole step, so divide by one minus it.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                (step * n_total / n_active).to("s"),
                "You counted every parameter; a token only passes through the active "
                "ones, so the FLOPs scale with the active parameters.",
            )
        )
    # the lesson's slip, the bubble left out, is named twice the 2% window away; adding the
    # bubble's share instead (1 − bubble² of the answer) lands inside the window or twice it
    # away: a scenario where either falls between is drawn again, never left unnamed
    require(abs((busy / step).to("").m - 1) >= 0.04, "the bubble is worth naming")
    require(
        all(not 0.02 < abs((m.value / step).to("").m - 1) < 0.04 for m in mistakes),
        "no slip lands just outside the window",
    )
    kept = distinct_mistakes(mistakes, step, 0.02)
    return Draw(
        text=text,
        answer=step,
        solution=solution,
        tolerance=0.02,
        mistakes=kept,
        hint="First the FLOPs of a step, then how long the cluster is busy, then the bubble.",
    )
