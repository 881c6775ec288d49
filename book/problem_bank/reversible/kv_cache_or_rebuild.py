"""The reverse trade: a KV cache keeps what a decode step would otherwise recompute. Rebuilding
it costs the weights' FLOPs, which grow with the context as the cache's reads do, plus
attention's, which grow as its square: at what context does attention's share catch up?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, require, shown
from book.problem_bank.batching._figures import attention_cost
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "Read the KV cache, or rebuild it every token?"
USES = ("inference_flops", "prefill_flops_per_token")
LECTURE = "2:04:02"

MODELS = (
    "llama_3_1_8b",
    "llama_3_1_70b",
    "llama_3_1_405b",
    "qwen3_235b_a22b",
    "mixtral_8x7b",
    "llama_2_70b",
)
PROBE = Q_(1024, "token/sequence")  # attention's FLOPs per pair do not depend on the context


def draw(rng, presets) -> Draw:
    model_id = rng.choice(MODELS)
    model = presets.get("model", model_id)
    case = dict(model=model_id, precision="bf16", presets=presets)
    detail = evaluate("prefill_flops_per_token", detailed=True, context_length=PROBE, **case)
    pair = shown((detail.inputs["prefill_attention_flops"].value * Q_(1, "token")).to("MFLOP"), 4)
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
    one = dict(n_active=Q_(1, "parameter"), training_tokens=Q_(1, "token"), presets=presets)
    train = (get("training_flops").evaluate(**one) / Q_(1, "parameter*token")).to(forward.units)
    fwd, trn = number(forward.m), number(train.m)
    per = (weights * Q_(1, "token")).to("GFLOP")  # one token's FLOPs in the weights
    moe = model.params_total > model.params_active
    total = (
        f"{quantity(model.params_total)} in all, {quantity(active)} active per token"
        if moe
        else quantity(active)
    )
    text = (
        f"{model.name} ({total}; {model.layers} layers) decodes a long sequence. Instead of "
        "reading its KV cache each step, it could rebuild the cache by running the whole "
        "context through the model again, each token attending to those before it; "
        f"{attention_cost(model_id, presets)}. The rebuild's FLOPs in the weights grow in "
        "proportion to the context, as the cache's reads do; attention's grow faster. At what "
        "context do attention's FLOPs in the rebuild equal the weights' FLOPs, in tokens?"
    )
    solution = (
        f"In the weights, a token's forward pass costs {fwd} FLOP per active parameter: "
        f"{fwd} × {quantity(active)} = {quantity(per)} a token.",
        f"In attention, token i scores the i tokens before it, so a context of L tokens makes "
        f"about half of L squared pairs, half of L per token on average, at "
        f"{quantity(pair, 4)} each.",
        f"They are equal when {quantity(pair, 4)} × half of L = {quantity(per)}: L = twice "
        f"{quantity(per)} / {quantity(pair, 4)} = **{quantity(crossover, 4)}**. Beyond it, "
        "attention dominates the rebuild and the cache saves more with every token of context; "
        "well below it, the weights dominate and the rebuild costs nearly a fixed multiple of "
        "the reads. "
        "Either way every server keeps the cache: the memory buys compute, the opposite of a "
        "reversible network's trade.",
    )
    mistakes = [
        Mistake(
            crossover / 2,
            "Rebuilding is causal: each token attends only to those before it, half the "
            "context on average, not all of it (or you counted one FLOP per parameter; a "
            "multiply-add is two).",
        ),
        Mistake(
            crossover * train / forward,
            f"You priced the weights at {trn} FLOP per parameter per token; a rebuild is a "
            f"forward pass only, {fwd}.",
        ),
    ]
    if moe:
        mistakes.append(
            Mistake(
                (crossover * model.params_total / active).to("token"),
                "Each token runs through its active parameters only, not the whole model.",
            )
        )
    return Draw(
        text=text,
        answer=crossover,
        solution=solution,
        tolerance=0.02,
        mistakes=distinct_mistakes(mistakes, crossover, 0.02),
        hint="A token's FLOPs in the weights against its attention's FLOPs, which grow with the "
        "number of tokens before it (about half the context, on average).",
    )
