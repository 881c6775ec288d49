"""The speed no price can beat: one sequence, so one read of the weights it uses per token."""

from __future__ import annotations

from book.format import quantity
from book.problem_bank import Draw, Mistake, evaluate, require
from units import Q_

KIND = "estimate"
TITLE = "The fastest an MoE can talk"
USES = ("expert_read_fraction", "weight_fetch_time", "step_time")

SETUPS = (  # (model, chip, chips in the server): servers that hold the model at FP8
    ("deepseek_v3", "h200", 8),
    ("deepseek_v3", "b200", 8),
    ("kimi_k2", "b200", 8),
    ("qwen3_235b_a22b", "h100_sxm", 4),
    ("qwen3_235b_a22b", "h200", 2),
)
FACTOR = 1.5  # narrower than the factor of two of a bytes-per-value slip


def draw(rng, presets) -> Draw:
    model, hardware, chips = rng.choice(SETUPS)
    n = Q_(chips, "chip")
    context = Q_(rng.choice((1024, 2048, 4096)), "token/sequence")
    one = Q_(1, "sequence")
    case = dict(
        hardware=hardware,
        model=model,
        precision="fp8",
        n_chips=n,
        context_length=context,
        batch_size=one,
        presets=presets,
    )
    step = evaluate("step_time", **case).to("ms")
    weights = evaluate("weight_fetch_time", detailed=True, **case)
    read = weights.inputs["expert_read_fraction"].value.to("").magnitude
    total = weights.inputs["n_total"].value
    active = evaluate("crossover_batch", detailed=True, **case).inputs["n_active"].value
    bandwidth = evaluate("hbm_drain_time", detailed=True, **case).inputs["mem_bandwidth"].value
    compute = evaluate("compute_time", **case).to("ms")
    require(compute < step / 3, "one sequence must be memory-bound")
    speed = (Q_(1, "token/sequence") / step).to("token/s/sequence")
    chip, name = presets.get("hardware", hardware).name, presets.get("model", model).name
    all_weights = (total * Q_(1, "B/parameter") / (n * bandwidth)).to("ms")

    text = (
        f"{name} has {quantity(total, 3)}, of which {quantity(active, 3)} are active per token. "
        f"You serve it in FP8 on {quantity(n)} ({chip}, {quantity(bandwidth.to('TB/s'), 3)} of "
        "HBM bandwidth each) to a single user, batch one, with a short context. Roughly how "
        "many tokens per second can that user get, at best? Any answer within a factor of "
        f"{FACTOR:g} is accepted."
    )
    solution = (
        "At batch one the step is memory-bound: the multiplies for one token take "
        f"{quantity(compute.to('µs'), 2)}, far below the memory reads.",
        "An MoE does not read all its weights for one token: only the experts that token is "
        "routed to, plus the weights every token uses. That is close to the active parameters, "
        f"not the total: the step reads about {read:.0%} of the weights, not all of them.",
        f"At one byte per FP8 weight over {quantity(n)} × {quantity(bandwidth.to('TB/s'), 3)} "
        f"(plus a little KV cache) a step takes about {quantity(step, 2)}.",
        f"One token per step: about **{quantity(speed, 2)}**. Reading all "
        f"{quantity(total, 3)} would take {quantity(all_weights, 2)}, a far slower bound.",
    )
    mistakes = (
        Mistake(
            (Q_(1, "token/sequence") / all_weights).to("token/s/sequence"),
            "You read every weight: at batch one an MoE reads only the experts its token "
            "is routed to (total versus active parameters).",
        ),
        Mistake(speed / 2, "FP8 stores one byte per weight, not two."),
        Mistake(
            (Q_(1, "token/sequence") / compute).to("token/s/sequence"),
            "That is the compute bound: at batch one the memory reads take far longer.",
        ),
    )
    return Draw(
        text=text,
        answer=speed,
        solution=solution,
        tolerance=FACTOR,
        mistakes=mistakes,
        hint="Which weights does one token actually need read from HBM?",
    )
