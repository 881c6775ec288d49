"""The least time to first token a replica allows, against a published mean TTFT."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, require
from derivations import get
from units import Q_

KIND = "multi"  # the bound, then its share of the measured wait
TITLE = "How much of a time to first token is the prefill?"
USES = ("weight_fetch_time", "ttft_bound")

NAMES = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4"}


def _rows(presets):
    """MLPerf rows with a measured mean TTFT and a dense model (every weight read once)."""
    for row in presets.measurement.values():
        model = presets.get("model", row.model)
        if row.get("ttft") is not None and not model.get("experts_routed"):
            yield row


def draw(rng, presets) -> Draw:
    row = rng.choice(sorted(_rows(presets), key=lambda r: r.id))
    prompt = row.input_tokens  # the mean prompt of the benchmark's dataset
    chip = presets.get("hardware", row.hardware)
    model = presets.get("model", row.model)
    precision = row.get("activations", row.weights)
    flops = chip.get(f"dense_flops_{precision}")
    chips = Q_(row.chips_per_replica, "chip")
    case = dict(
        hardware=row.hardware,
        model=row.model,
        precision=row.weights,
        flops=flops,
        n_chips=chips,
        presets=presets,
    )
    # the prompt's tokens go through the model together, like a batch of one-token sequences
    batch = Q_(prompt.to("token").m, "sequence")
    result = get("ttft_bound").evaluate_detailed(input_tokens=prompt, batch_size=batch, **case)
    bound = result.value.to("ms")
    forward = result.inputs["flops_per_param_token"].value
    reads = {k: v for k, v in case.items() if k != "flops"}
    weights = get("weight_fetch_time").evaluate(batch_size=batch, **reads).to("ms")
    active = result.inputs["n_active"].value
    compute = (prompt * forward * active / (chips * flops / Q_(1, "chip"))).to("ms")
    binds = "compute" if compute >= weights else "weights"
    # what the causal attention over the prompt would add to its multiplies (left out, as asked)
    per_token = get("prefill_flops_per_token").evaluate(
        model=row.model, context_length=prompt / Q_(1, "sequence"), presets=presets
    )
    attention = (per_token / (forward * active)).to("").m - 1
    measured = row.ttft.to("ms")
    share = (bound / measured).to("")
    one = chips.m == 1
    replica = "one chip" if one else f"{number(chips.m)} chips"
    version, _, rest = row.name.partition(": ")
    _, system, scenario = rest.split(", ")

    text = (
        f"In an {version} run on {system} ({scenario} scenario), {model.name} "
        f"({quantity(model.params_total)}, dense) runs in {NAMES[row.weights]} on "
        f"{chip.name.split(' (')[0]} GPUs ({quantity(flops)} dense in {NAMES[precision]}, "
        f"{quantity(chip.hbm_bandwidth)} of HBM each), each replica on {replica}. The "
        f"measured mean time to first token was {quantity(measured)}; the benchmark's prompts "
        f"average {quantity(prompt)}. Leaving attention's own FLOPs out, what share of the "
        "measured mean is the least time a replica needs to produce a first token for such a "
        "prompt? Answer as a fraction (or a percentage, with its % sign)."
    )
    solution = (
        f"The prompt's {quantity(prompt)} go through the model in one pass, "
        f"{number(forward.m)} FLOPs per parameter each: on {replica} at peak that takes "
        f"{quantity(compute)}. (Attention's own FLOPs, left out as asked, would add "
        f"{number(100 * attention, 2)}%: each prompt token attends to half the prompt on "
        "average.)",
        f"The pass also reads every weight once, {quantity(model.params_total)} in "
        f"{NAMES[row.weights]} at the replica's bandwidth: {quantity(weights)}.",
        f"The slower side, the {binds}, bounds the prefill: {quantity(bound)}. The rest of "
        "the wait is the prefill running below peak and queueing behind other requests, which "
        "the bound does not model.",
        f"Against the measured mean: {quantity(bound)} / {quantity(measured)} = "
        f"**{number(100 * share.m, 4)}%**.",
    )
    candidates = [
        (
            weights if binds == "compute" else compute,
            "That is the side that does not bind; "
            "the prefill takes the slower of its compute and its weight read.",
        ),
        (bound * chips.m, "You ran the prompt on one chip; the replica's chips share it.")
        if not one
        else (None, ""),
        (
            compute + weights,
            "You added the compute and the weight read; they overlap, so the prefill takes "
            "the slower of the two, not their sum.",
        ),
        (max(compute / 2, weights), "You counted one FLOP per parameter; a multiply-add is two."),
        # FP4 packs two weights a byte: one byte a weight doubles the read (the chain rerun)
        (
            max(compute, 2 * weights),
            "You read the weights at one byte each; FP4 stores half a byte per weight.",
        )
        if row.weights == "fp4"
        else (None, ""),
        (
            measured - bound,
            "That is the queueing time's share; the question asks for the prefill's.",
        ),
    ]
    slips = [Mistake((v / measured).to(""), why) for v, why in candidates if v is not None]
    # every slip, the whole chain rerun: inside the window, or twice it away and named
    require(
        all(not 0.03 < abs((m.value / share).to("").m - 1) < 0.06 for m in slips),
        "no slip lands just outside the window",
    )
    mistakes = distinct_mistakes(slips, share, 0.03)
    return Draw(
        hint=(
            "A prefill is one pass over the prompt: bound either by its multiplies or by one "
            "read of the weights. Which is slower here?"
        ),
        text=text,
        answer=share,
        solution=solution,
        tolerance=0.03,
        mistakes=tuple(mistakes),
    )
