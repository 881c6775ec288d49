"""The least time to first token a replica allows, against a published mean TTFT."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    evaluate,
    lands_clear,
    require,
    shown,
    slips_apart,
)
from units import Q_

KIND = "multi"  # the bound, then its share of the measured wait
TITLE = "How much of a time to first token is the prefill?"
USES = ("prefill_flops_per_token", "weight_fetch_time", "ttft_bound")

NAMES = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4"}
BYTES = {2.0: "two bytes", 1.0: "one byte", 0.5: "half a byte"}


def _rows(presets):
    """MLPerf rows with a measured mean TTFT and a dense model (every weight read once)."""
    for row in presets.measurement.values():
        model = presets.get("model", row.model)
        if row.get("ttft") is not None and not model.get("experts_routed"):
            yield row


def draw(rng, presets) -> Draw:
    row = rng.choice(sorted(_rows(presets), key=lambda r: r.id))
    chip = presets.get("hardware", row.hardware)
    model = presets.get("model", row.model)
    precision = row.get("activations", row.weights)
    # the statement's figures, as a student reads them
    prompt = shown(row.input_tokens, 4)
    flops = shown(chip.get(f"dense_flops_{precision}"), 3)
    bandwidth = shown(chip.hbm_bandwidth, 3)
    params = shown(model.params_total, 4)
    measured = shown(row.ttft.to("ms"), 4)
    chips = Q_(row.chips_per_replica, "chip")
    system = Q_(row.chips, "chip")
    context = row.input_tokens / Q_(1, "sequence")
    detail = evaluate(
        "prefill_flops_per_token",
        detailed=True,
        model=row.model,
        context_length=context,
        presets=presets,
    )
    forward = detail.inputs["flops_per_param_token"].value
    # attention's FLOPs per pair of a token and one it attends to (the preset's per-token unit)
    pair = Q_(shown(detail.inputs["prefill_attention_flops"].value.to("MFLOP/token"), 3).m, "MFLOP")
    # bytes per weight the chapter taught for the stored precision (FP4: half a byte)
    per_weight = (
        evaluate(
            "weight_fetch_time",
            hardware=row.hardware,
            model=row.model,
            precision=row.weights,
            n_chips=Q_(1, "chip"),
            presets=presets,
        )
        * chip.hbm_bandwidth
        / model.params_total
    ).to("byte/parameter")
    per_weight = Q_(round(per_weight.m * 2) / 2, "byte/parameter")  # FP4: half a byte

    def solve(fpp=forward, attention=True, n=chips, per=per_weight):
        """The prefill bound, the whole chain rerun with one input changed."""
        linear = fpp * params
        pairs = prompt / 2 if attention else 0 * prompt  # a causal token's, on average
        extra = pair * pairs / Q_(1, "token") ** 2  # given in FLOPs: no multiply-add slip
        per_token = (linear + extra).to("GFLOP/token")
        compute = (prompt * per_token / (n * flops / Q_(1, "chip"))).to("ms")
        read = (params * per / (n * bandwidth / Q_(1, "chip"))).to("ms")
        return per_token, compute, read, max(compute, read)

    per_token, compute, weights, bound = solve()
    linear = (forward * params).to("GFLOP/token")
    attention = (per_token / linear).to("").m - 1
    binds = "multiplies" if compute >= weights else "weight read"
    share = (bound / measured).to("")
    one = chips.m == 1
    replica = "one chip" if one else f"{number(chips.m)} chips"
    version, _, rest = row.name.partition(": ")
    _, where, scenario = rest.split(", ")

    text = (
        f"In an {version} run on {where} ({scenario} scenario), {model.name} "
        f"({quantity(params, 4)}, dense) runs in {NAMES[row.weights]} on "
        f"{chip.name.split(' (')[0]} GPUs ({quantity(flops, 3)} dense in {NAMES[precision]}, "
        f"{quantity(bandwidth, 3)} of HBM each), each replica on {replica}. The "
        f"measured mean time to first token was {quantity(measured, 4)}; the benchmark's "
        f"prompts average {quantity(prompt, 4)}. Attention costs {quantity(pair, 3)} for each "
        "pair of a prompt token and a token it attends to (itself or one before it). What "
        "share of the measured mean is the least time a replica needs to produce a first "
        "token for such a prompt? Answer as a fraction (or a percentage, with its % sign)."
    )
    solution = (
        f"Each prompt token costs {number(forward.m)} FLOPs per parameter, "
        f"{quantity(linear, 4)}, and its attention: a causal token attends to half the prompt "
        f"on average, half of {quantity(prompt, 4)} × {quantity(pair, 3)}, which adds "
        f"{number(100 * attention, 2)}%: {quantity(per_token, 4)} in all.",
        f"The prompt's {quantity(prompt, 4)} go through the model in one pass: on {replica} "
        f"at peak that takes {quantity(compute, 4)}.",
        f"The pass also reads every weight once, {quantity(params, 4)} in "
        f"{NAMES[row.weights]} ({BYTES[per_weight.m]} each) at the replica's "
        f"bandwidth: {quantity(weights, 4)}.",
        f"The slower side, the {binds}, bounds the prefill: {quantity(bound, 4)}. The rest of "
        "the wait is the prefill running below peak and queueing behind other requests, which "
        "the bound does not model.",
        f"Against the measured mean: {quantity(bound, 4)} / {quantity(measured, 4)} = "
        f"**{number(100 * share.m, 4)}%**.",
    )
    # the statement's figures are exact to the answer's: the sum of the two sides lands 2-3%
    # out on a compute-bound prefill, two windows away only at 1%
    tolerance = 0.01
    candidates = [
        (
            weights if compute >= weights else compute,
            "That is the side that does not bind; "
            "the prefill takes the slower of its compute and its weight read.",
        ),
        (
            solve(attention=False)[3],
            "You left out attention's FLOPs: each prompt token attends to half the prompt "
            "on average.",
        ),
        (
            solve(n=Q_(1, "chip"))[3],
            "You ran the prompt on one chip; the replica's chips share it.",
        )
        if not one
        else (None, ""),
        (
            solve(n=system)[3],
            f"You gave the prompt all {number(system.m)} chips of the system; a replica has "
            f"{number(chips.m)}, and the others serve other prompts.",
        )
        if system != chips
        else (None, ""),
        (
            compute + weights,
            "You added the compute and the weight read; they overlap, so the prefill takes "
            "the slower of the two, not their sum.",
        ),
        (
            solve(fpp=forward / 2)[3],
            "You counted one FLOP per parameter; a multiply and an add are two.",
        ),
        (
            solve(per=Q_(1, "byte/parameter"))[3],
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
    require(all(lands_clear(m.value, share, tolerance) for m in slips), "a slip lands clear")
    # and no two slips on one value (reader 26: all the system's chips halved the time, as one
    # FLOP per multiply-add did)
    require(slips_apart(slips, share, tolerance), "no two slips land on one value")
    mistakes = distinct_mistakes(slips, share, tolerance)
    return Draw(
        hint=(
            "A prefill is one pass over the prompt: its multiplies (the weights' and "
            "attention's) against one read of the weights. Which is slower here?"
        ),
        text=text,
        answer=share,
        solution=solution,
        tolerance=tolerance,
        mistakes=tuple(mistakes),
    )
