"""The speed no price can beat: one sequence, so one read of the weights it uses per token."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, evaluate, require
from book.problem_bank.batching._figures import figures, flop_rate, tokens
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
    f = figures(**case)
    total, per_value = f["n_total"], f["weight_bytes_per_value"]
    active = evaluate("crossover_batch", detailed=True, **case).inputs["n_active"].value
    bandwidth, kv_per_token = f["mem_bandwidth"], f["kv_bytes_per_token"].to("kB/token")
    attention = f["attention_flops_per_token"].to("MFLOP/token")
    per = Q_(1, "token")  # a figure per token of context, said as "... per token of context"
    read_time, kv = weights.value.to("ms"), evaluate("kv_fetch_time", **case).to("ms")
    share = (read_time * n * bandwidth / (total * per_value * Q_(1, "value/parameter"))).to("")
    routed = weights.inputs["routed_weight_share"].value.to("").m
    touched = weights.inputs["expert_read_fraction"].value.to("").m
    compute = evaluate("compute_time", **case).to("µs")
    per_token = (2 * active * Q_(1, "FLOP/parameter")).to("GFLOP")  # a multiply-add each
    in_weights = (per_token / (n * f["flops"])).to("µs")
    require(compute < step / 3, "one sequence must be memory-bound")
    require(kv < read_time / 10, "the cache's read is a small addition at this context")
    speed = (Q_(1, "token/sequence") / step).to("token/s/sequence")
    chip, name = presets.get("hardware", hardware).name, presets.get("model", model).name
    all_weights = (total * Q_(1, "B/parameter") / (n * bandwidth)).to("ms")

    text = (
        f"{name} has {quantity(total, 3)}, of which {quantity(active, 3)} are active per token. "
        f"You serve it in FP8 (weights and KV cache) on {quantity(n)} ({chip}, "
        f"{quantity(bandwidth.to('TB/s'), 3)} of HBM bandwidth and "
        f"{flop_rate(f['flops'])} of dense FP8 math each) to a single user, batch one, whose "
        f"conversation holds {tokens(context)} of context; its KV cache takes "
        f"{quantity(kv_per_token * per, 3)} per token of context, and attention costs "
        f"{quantity(attention * per, 3)} per token of context for each new token. Roughly how many "
        "tokens per second can that user get, at best? Any answer within a factor of "
        f"{FACTOR:g} is accepted."
    )
    solution = (
        "At batch one the step is memory-bound: the multiplies for one token take "
        f"{quantity(in_weights, 2)} in the weights, {quantity(compute, 2)} with "
        "attention over the context, far below the memory reads.",
        "An MoE does not read all its weights for one token: only the experts that token is "
        f"routed to ({number(100 * touched, 2)}% of the routed experts), plus the weights every "
        f"token uses (the {number(100 * (1 - routed), 2)}% outside the routed experts). That is "
        f"close to the active parameters, not the total: the step reads about "
        f"{number(100 * share.m, 2)}% of the weights.",
        f"At one byte per FP8 weight over {quantity(n)} × {quantity(bandwidth.to('TB/s'), 3)} "
        f"the weights take {quantity(read_time, 3)}; the cache, {tokens(context)} × "
        f"{quantity(kv_per_token * per, 3)} per token, adds {quantity(kv.to('µs'), 2)}: a "
        f"step of about {quantity(step, 2)}.",
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
