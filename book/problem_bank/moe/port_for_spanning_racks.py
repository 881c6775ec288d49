"""How fast a network port must be for an expert layer to span racks without waiting on it."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import (
    Draw,
    Mistake,
    Refused,
    distinct_mistakes,
    evaluate,
    lands_clear,
    require,
    slips_apart,
)
from book.problem_bank.batching._figures import chip_name, figures
from units import Q_

KIND = "multi"
TITLE = "The network port that would let an expert layer span racks"
USES = (
    "alltoall_bytes_per_token",
    "alltoall_time",
    "compute_time",
    "offrack_fraction",
    "multi_rack_slowdown",
)
LECTURE = "32:09"

# Apart from two_racks_alltoall's models, so one draw never asks the same all-to-all twice.
MODELS = ("qwen3_235b_a22b", "gpt_oss_120b")
RACKS = ("gb200_nvl72", "gb300_nvl72")
# not four: over four racks every byte off the rack (4/3 the port) and a BF16 dispatch (4/3 the
# bytes) land on one value whatever the draw, and a value has one diagnosis (reader 27)
SPANS = (2, 8)
# either side of the crossover (checked, with a margin): past it the multiplies set the layer's
# time and the port does not depend on the batch; below it the weight reads do, and the port
# grows with the batch
BATCHES = (256, 384, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 4096)
BATCHES += (5120, 6144, 7168, 8192, 10_240, 12_288)
BATCHES += (16_384, 24_576, 32_768, 49_152)
SPAN_WORDS = {2: "two", 8: "eight"}
ATTEMPTS = 100  # scenarios drawn before the draw is refused (one in six or so passes)
CLEAR = 1.2  # the longer of the multiplies and the reads at least this much the longer
TOLERANCE = 0.03


def draw(rng, presets) -> Draw:
    chips = presets.parameter["expert_parallel_chips"].value
    spans = [s for s in SPANS if chips.to("chip").m % s == 0]  # GPUs split evenly: whole racks
    model = rng.choice(MODELS)  # first: Qwen3 passes at few batches, and is half the draws
    for _ in range(ATTEMPTS):
        hardware, span, batch = rng.choice(RACKS), rng.choice(spans), rng.choice(BATCHES)
        try:
            return _build(model, hardware, span, batch, presets)
        except Refused:
            continue
    raise Refused("no scenario in the draws tried")


def _build(model: str, hardware: str, span: int, batch: int, presets) -> Draw:
    """The problem on one scenario, or Refused where its checks fail."""
    chips = presets.parameter["expert_parallel_chips"].value
    case = dict(
        model=model,
        hardware=hardware,
        precision="fp8",
        batch_size=Q_(batch, "sequence"),
        expert_parallel_chips=chips,
        n_chips=chips,
        presets=presets,
    )
    spec = presets.get("model", model)
    layers = Q_(spec.layers, "layer")
    k, experts, d = spec.experts_active, spec.experts_routed, spec.d_model
    detail = evaluate("alltoall_bytes_per_token", detailed=True, **case)
    bytes_per_token = detail.value.to("kB/token")
    b_out = detail.inputs["activation_bytes_per_value"].value.to("byte/value").m  # FP8
    b_back = detail.inputs["combine_bytes_per_value"].value.to("byte/value").m  # BF16
    one = evaluate("alltoall_time", **case, racks_spanned=Q_(1, "rack")).to("µs")
    short = dict(case, context_length=Q_(1, "token/sequence"))  # the weights' FLOPs alone
    step_compute = evaluate("compute_time", **short).to("µs")
    reads = evaluate("weight_fetch_time", detailed=True, **short)
    require(reads.inputs["expert_read_fraction"].value.m > 0.99, "the batch reads every expert")
    reads = reads.value.to("µs")
    require(max(step_compute, reads) > CLEAR * min(step_compute, reads), "a clear regime")
    compute_bound = step_compute > reads
    layer = (max(step_compute, reads) / layers.m).to("µs")
    ratio = (one / layer).to("").m
    require(ratio < 1, "inside one rack the all-to-all hides behind the compute")
    offrack = evaluate("offrack_fraction", racks_spanned=Q_(span, "rack")).to("").m
    penalty = 1 / (offrack * ratio)  # the off-rack share, slowed by it, takes the layer's time
    at = dict(case, racks_spanned=Q_(span, "rack"), scale_out_penalty=Q_(penalty, ""))
    slowdown = evaluate("multi_rack_slowdown", **at).to("").m
    spanned = evaluate("alltoall_time", **at).to("µs")
    require(abs((spanned / layer).to("").m - 1) < 1e-6, "the port just keeps up")
    f = figures(**case)
    hw = presets.get("hardware", hardware)
    up, out = hw.scale_up_bandwidth_per_direction, hw.scale_out_bandwidth_per_direction
    port = (up / penalty).to("Gbit/s")
    rack = chip_name(presets, hardware)
    name = presets.get("model", model).name
    words = SPAN_WORDS[span]

    text = (
        f"{name} sends each token to {quantity(Q_(k, 'expert'))} of {number(experts)} in each of "
        f"its MoE layers; its activations are {number(d)} values wide, it has "
        f"{quantity(layers)} and {quantity(f['n_total'], 3)} in all, "
        f"{quantity(f['n_active'], 3)} active per token, and you run it in FP8, sending "
        "activations to the experts in FP8 and their outputs back in BF16. Its expert layers "
        f"are spread over {quantity(chips)} of {rack} racks, whose GPUs each have "
        f"{quantity(up, 3)} of NVLink per direction, {quantity(f['mem_bandwidth'], 3)} of HBM "
        f"and {quantity(f['flops'].to('PFLOP/s'), 3)} of dense FP8 math. A decode step runs a "
        f"batch of {quantity(case['batch_size'])}, one token each, with contexts so short that "
        "attention's FLOPs and the KV cache's reads can be ignored. If each expert layer instead "
        f"spans {words} racks, its GPUs split evenly among them "
        f"({quantity(chips / span)} each), how fast must each GPU's "
        "network port be, per direction, for the layer's all-to-all to take no longer than the "
        "layer's own time on the chips? Answer in Gb/s."
    )
    solution = (
        f"Bytes: each token's activation goes out to its {number(k)} experts and comes back, "
        f"{number(b_out)} byte per value out (FP8) and {number(b_back)} back (BF16): "
        f"{number(k)} × {number(d)} × {number(b_out + b_back)} = "
        f"{quantity(bytes_per_token, 3)} per MoE layer.",
        f"The layer's time: a step's multiplies, two FLOPs per active parameter per token, take "
        f"{quantity(step_compute.to('ms'), 3)} on the {quantity(chips)}; reading every weight "
        "once (at this batch every expert is hit), one byte each, takes "
        f"{quantity(reads.to('ms'), 3)}. "
        + (
            "The batch is past the crossover, so the multiplies set the step"
            if compute_bound
            else "The batch is below the crossover, so the reads set the step"
        )
        + f"; shared over its {quantity(layers)}, a layer's time is {quantity(layer, 3)}.",
        f"In one rack the batch's bytes leave {quantity(chips)} at {quantity(up, 3)} each: "
        f"{quantity(one, 3)}. So in one rack the all-to-all takes "
        f"{number(ratio, 3)} of the layer's time. "
        + (
            "Both grow with the batch and shrink with the chips alike, so neither changes "
            "that share."
            if compute_bound
            else "The all-to-all grows with the batch and the reads do not: a larger batch "
            "would leave the network less room."
        ),
        f"Over {words} racks, a token's expert sits in another rack {number(offrack, 3)} of the "
        f"time. Those bytes cross the network while the rest ride NVLink at once, so the layer "
        f"waits for the slower share: {number(offrack, 3)} × penalty × {quantity(one, 3)}. "
        f"Setting that equal to {quantity(layer, 3)} gives a penalty of at most "
        f"{number(penalty, 3)} (the all-to-all is then {number(slowdown, 3)} times the one-rack "
        "time).",
        f"So the port must reach {quantity(up, 3)} / {number(penalty, 3)} = "
        f"**{quantity(port, 4)}** per direction, "
        + (
            f"{number((port / out).to('').m, 2)} times the {quantity(out, 3)} this rack's "
            "GPUs have."
            if port > out
            else f"under the {quantity(out, 3)} this rack's GPUs have: "
            "their network already keeps up."
        ),
    )
    sparsity = (f["n_total"] / f["n_active"]).to("").m
    summed = (layer - (1 - offrack) * one) / (offrack * one)  # if the two shares added

    def port_for(step):
        """The port a student finds who takes ``step`` for the step's time (the rest of the
        chain as the solution's): the off-rack share of one rack's all-to-all fills a layer."""
        return (up * offrack * one * layers.m / step).to("Gbit/s")

    require(abs((port_for(max(step_compute, reads)) / port).to("").m - 1) < 1e-6)
    other, longer = ("weight reads'", "multiplies") if compute_bound else ("multiplies'", "reads")
    mistakes = (
        Mistake(
            port.to("GB/s").m * Q_(1, "Gbit/s"),
            "That is the rate in gigabytes per second: a network port is quoted in bits, "
            "eight to the byte.",
        ),
        Mistake(
            port * b_out / (b_out + b_back),
            "You counted the dispatch only: the experts' outputs come back too (the combine).",
        ),
        Mistake(
            port / 2,
            "A link's rate is per direction: sending and receiving at once do not double it.",
        ),
        Mistake(
            port / offrack,
            "Not every byte leaves the rack: a token's expert is in its own rack one time in "
            f"{words}.",
        ),
        Mistake(
            port_for(max(step_compute * sparsity, reads)),
            "You gave the layer every parameter's FLOPs: a token multiplies only its active "
            "parameters.",
        ),
        Mistake(
            port_for(min(step_compute, reads)),
            f"You gave the layer the {other} time: at this batch the {longer} take longer, "
            "and the all-to-all may fill the layer's whole step.",
        ),
        Mistake(
            port_for(step_compute + reads),
            "You gave the layer its weight reads plus its multiplies: they overlap, so the "
            "layer takes the longer of the two.",
        ),
        Mistake(
            port * 2 * b_back / (b_out + b_back),
            "The dispatch goes out in FP8, one byte per value, not BF16's two.",
        ),
        Mistake(  # reader 26: the outputs sent back in FP8 (the statement says BF16)
            port * 2 * b_out / (b_out + b_back),
            "The combine comes back in BF16, two bytes per value, not FP8's one.",
        ),
        Mistake(
            (up / summed).to("Gbit/s"),
            "You added the on-rack and off-rack times: the two kinds of link move bytes at "
            "once, so the layer waits for the slower, not the sum.",
        ),
    )
    # each wrong value has one diagnosis (reader 27: over four racks a BF16 dispatch and every
    # byte off the rack met), and none lands just outside the window
    require(slips_apart(mistakes, port, TOLERANCE), "no two slips land on one value")
    require(all(lands_clear(m.value, port, TOLERANCE) for m in mistakes), "slips clear or inside")
    mistakes = distinct_mistakes(mistakes, port, TOLERANCE)
    return Draw(
        text=text,
        answer=port,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
        hint="Is the layer's time set by its weight reads or its multiplies? Compare one "
        "layer's all-to-all inside one rack with that time; then ask how much slower the "
        "off-rack share may move.",
    )
