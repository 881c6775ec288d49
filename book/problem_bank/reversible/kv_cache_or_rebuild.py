"""The reverse trade: a KV cache keeps what a decode step would otherwise recompute. Rebuilding
it costs the weights' FLOPs, which grow with the context as the cache's reads do, plus
attention's, which grow as its square. How many times longer does rebuilding a context take than
reading its cache, and where does attention's share catch up?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, require, shown
from book.problem_bank.batching._figures import (
    attention_cost,
    chip_name,
    figures,
    flop_rate,
    kv_shape,
    size,
    weight_bytes,
)
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "Read the KV cache, or rebuild it every token?"
USES = ("inference_flops", "prefill_flops_per_token", "kv_bytes_per_token")
LECTURE = "2:04:02"

MODELS = (
    "llama_3_1_8b",
    "llama_3_1_70b",
    "llama_3_1_405b",
    "qwen3_235b_a22b",
    "mixtral_8x7b",
    "llama_2_70b",
)
CHIPS = ("h100_sxm", "h200", "b200")
CONTEXTS = (8192, 32_768, 131_072)
GPUS = (1, 2, 4, 8)  # a server's GPUs, split as tensor parallelism splits a model
PROBE = Q_(1024, "token/sequence")  # attention's FLOPs per pair do not depend on the context
# attention's least share of the rebuild: leaving it out, or counting every pair twice over,
# lands at least twice the tolerance away
TOLERANCE = 0.02
ATTENTION_SHARE = 2.5 * TOLERANCE


def draw(rng, presets) -> Draw:
    token = Q_(1, "token")
    while True:  # until attention is a clear share of the rebuild (its two slips clear)
        model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
        model = presets.get("model", model_id)
        context = Q_(rng.choice(CONTEXTS), "token")
        case = dict(model=model_id, precision="bf16", presets=presets)
        detail = evaluate("prefill_flops_per_token", detailed=True, context_length=PROBE, **case)
        pair = shown(
            (detail.inputs["prefill_attention_flops"].value * Q_(1, "token")).to("MFLOP"), 4
        )
        active = shown(model.params_active.to("Gparam"))  # as the statement prints them
        forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
        weights = (forward * active).to("GFLOP/token")  # a token's pass through the weights
        # causal: the L tokens make L^2/2 pairs, L/2 a token on average; equal when pair L/2 = 2N
        crossover = Q_((2 * weights * Q_(1, "token") / pair).to("").m, "token")
        # the catalogue agrees: at that context a token's prefill costs twice its weights' FLOPs
        at = Q_(crossover.m, "token/sequence")
        exact = dict(case, n_active=active, prefill_attention_flops=pair / Q_(1, "token"))
        both = evaluate("prefill_flops_per_token", context_length=at, **exact).to("GFLOP/token")
        require(abs((both / weights).to("").m - 2) < 1e-6, "attention equals the weights there")
        per = (weights * Q_(1, "token")).to("GFLOP")  # one token's FLOPs in the weights
        share = (pair * context / token / 2 / (per + pair * context / token / 2)).to("").m
        if share >= ATTENTION_SHARE:
            break
    one = dict(n_active=Q_(1, "parameter"), training_tokens=Q_(1, "token"), presets=presets)
    train = (get("training_flops").evaluate(**one) / Q_(1, "parameter*token")).to(forward.units)
    fwd, trn = number(forward.m), number(train.m)

    # the trade at one context on one server: rebuild its cache, or read it
    f = figures(hardware=hardware, model=model_id, precision="bf16", presets=presets)
    kv = evaluate("kv_bytes_per_token", **case).to("kB/token")  # exact from the shape given
    # the fewest GPUs of a server whose HBM holds the BF16 weights and the context's cache:
    # the model is split over them, and FLOP rate and bandwidth both scale with their number
    held = (weight_bytes(f) + kv * context).to("GB")
    usable = presets.parameter["usable_hbm_share"].value.to("").m  # what an engine fills
    gpus = next((n for n in GPUS if n * usable * f["hbm_capacity"] >= held), None)
    require(gpus is not None, "the weights and the cache fit one server")
    one_flops = shown(f["flops"].to("TFLOP/s"), 4)  # as flop_rate prints it
    one_bandwidth = shown(f["mem_bandwidth"].to("TB/s"), 3)
    hbm = shown(f["hbm_capacity"].to("GB"))
    flops, bandwidth = gpus * one_flops, gpus * one_bandwidth

    def rebuild_time(pairs_per_token, weights_per_token):
        """Seconds to run the context through the model again, at the chip's dense peak."""
        per_token = weights_per_token + pair * pairs_per_token
        return (context / token * per_token / flops).to("s")

    rebuild = rebuild_time(context / token / 2, per)
    cache = (kv * context).to("GB")
    read = (cache / bandwidth).to("ms")
    ratio = (rebuild / read).to("").m
    exact_rebuild = (
        context
        / token
        * evaluate("prefill_flops_per_token", context_length=context / Q_(1, "sequence"), **exact)
        * token
        / flops
    ).to("s")
    require(abs((exact_rebuild / rebuild).to("").m - 1) < 1e-6, "the catalogue's prefill")
    require(ratio > 10, "rebuilding is far slower than reading")
    flops_total = (context / token * (per + pair * context / token / 2)).to("PFLOP")

    moe = model.params_total > model.params_active
    total = (
        f"{quantity(model.params_total)} in all, {quantity(active)} active per token"
        if moe
        else quantity(active)
    )
    chip = chip_name(presets, hardware)
    where = (
        f"one {chip} GPU ({flop_rate(one_flops)} of dense BF16 math, {quantity(hbm)} of HBM "
        f"at {quantity(one_bandwidth, 3)})"
        if gpus == 1
        else f"{number(gpus)} {chip} GPUs, the model split evenly over them (each "
        f"{flop_rate(one_flops)} of dense BF16 math, {quantity(hbm)} of HBM at "
        f"{quantity(one_bandwidth, 3)})"
    )
    together = (
        ""
        if gpus == 1
        else f"Together the {number(gpus)} GPUs do {number(gpus)} × {flop_rate(one_flops)} = "
        f"{flop_rate(flops)} and read {quantity(bandwidth, 3)}; they hold the "
        f"{size(weight_bytes(f))} of BF16 weights and the cache. "
    )
    text = (
        f"{model.name} ({total}; {kv_shape(model_id, presets)}) decodes on {where}, in BF16 "
        f"(weights, KV cache and math). Its context holds {quantity(context, 6)}. "
        "Instead of reading its KV cache at the next step, it could rebuild the cache by "
        "running the whole context through the model again, each token attending to those "
        f"before it; {attention_cost(model_id, presets)}. How many times longer does "
        "rebuilding the cache take than reading it, at the GPUs' dense peak and full "
        "bandwidth?"
    )
    solution = (
        f"In the weights, a token's forward pass costs {fwd} FLOP per active parameter: "
        f"{fwd} × {quantity(active)} = {quantity(per)} a token. In attention, token i scores "
        "the i tokens before it, so a context of L tokens makes about half of L squared "
        f"pairs, half of L per token on average, at {quantity(pair, 4)} each. The two are "
        f"equal at L = twice {quantity(per)} / {quantity(pair, 4)} = "
        f"{quantity(crossover, 4)}: beyond it attention dominates the rebuild.",
        f"{together}The rebuild: {quantity(context, 6)} each cost {quantity(per)} in the weights "
        f"plus {quantity(pair, 4)} × half the context in attention, "
        f"{quantity(flops_total, 3)} in all; at {flop_rate(flops)} that takes "
        f"{quantity(rebuild, 3)}.",
        f"The read: a token's cache is a key and a value per KV head, in every layer, at two "
        f"bytes each in BF16, {quantity(kv, 4)}; the context's {size(cache)} stream in at "
        f"{quantity(bandwidth, 3)} in {quantity(read, 3)}.",
        f"Rebuilding takes {quantity(rebuild, 3)} / {quantity(read, 3)} = **{number(ratio, 4)}** "
        "times as long as reading. Every server keeps the cache: the memory buys compute, "
        "the opposite of a reversible network's trade.",
    )
    answer = Q_(ratio, "")

    def slip(rebuild_s=rebuild, read_s=read):
        return Q_((rebuild_s / read_s).to("").m, "")

    mistakes = [
        Mistake(
            slip(rebuild_time(context / token, per)),
            "Rebuilding is causal: each token attends only to those before it, half the "
            "context on average, not all of it.",
        ),
        Mistake(
            slip(rebuild_time(context / token / 2, per * train / forward)),
            f"You priced the weights at {trn} FLOP per parameter per token; a rebuild is a "
            f"forward pass only, {fwd}.",
        ),
        Mistake(
            slip(rebuild_time(0, per)),
            "You left attention out of the rebuild; every token attends to those before it.",
        ),
        Mistake(
            slip(read_s=read / 2),
            "You counted one byte per value: BF16 stores two.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                slip(rebuild_time(context / token / 2, per * model.params_total / active)),
                "Each token runs through its active parameters only, not the whole model.",
            )
        )
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=distinct_mistakes(mistakes, answer, TOLERANCE),
        hint="Count the rebuild's FLOPs (the weights' plus attention's, which grow with the "
        "number of tokens before each one) over the GPUs' FLOP rate, against the cache's "
        "bytes over its bandwidth.",
    )
