"""The reverse trade: a KV cache keeps what a decode step would otherwise recompute. How much
slower would recomputing it be than reading it, at a long context where attention's own FLOPs
count?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, require
from book.problem_bank.batching._figures import attention_cost
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "multi"
TITLE = "Read the KV cache, or rebuild it every token?"
USES = ("kv_bytes_per_token", "kv_cache_per_sequence", "prefill_flops_per_token")
LECTURE = "2:04:02"

MODELS = (
    "llama_3_1_8b",
    "llama_3_1_70b",
    "llama_3_1_405b",
    "qwen3_235b_a22b",
    "mixtral_8x7b",
    "llama_2_70b",
)
CHIPS = ("h100_sxm", "h200", "b200", "mi300x")
CONTEXTS = (32768, 65536, 131072)  # long: attention adds a fair share to the rebuild


def _size(q) -> str:
    """Bytes in GB, or in MB below one GB."""
    return quantity(q.to("GB") if q >= Q_(1, "GB") else q.to("MB"))


def draw(rng, presets) -> Draw:
    model_id, hardware = rng.choice(MODELS), rng.choice(CHIPS)
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    model, chip = presets.get("model", model_id), presets.get("hardware", hardware)
    case = dict(model=model_id, precision="bf16", presets=presets)
    cache = get("kv_cache_per_sequence").evaluate_detailed(context_length=context, **case)
    per_token = cache.inputs["kv_bytes_per_token"].value.to("kB/token")
    cache_bytes = (cache.value * Q_(1, "sequence")).to("GB")
    tokens = (context * Q_(1, "sequence")).to("token")
    weights_only = (
        get("inference_flops")
        .evaluate(inference_tokens=tokens, inference_inefficiency=1, **case)
        .to("FLOP")
    )
    flops_per_token = evaluate("prefill_flops_per_token", context_length=context, **case)
    rebuild = (flops_per_token * tokens).to("FLOP")
    attention = (rebuild - weights_only).to("FLOP")
    pair = evaluate("prefill_flops_per_token", detailed=True, context_length=context, **case)
    pair = (pair.inputs["prefill_attention_flops"].value * Q_(1, "token")).to("MFLOP")
    require(attention > 0.1 * weights_only, "attention's FLOPs add a fair share at this context")
    flops, bandwidth = chip.get("dense_flops_bf16"), chip.hbm_bandwidth
    t_read = (cache_bytes / bandwidth).to("ms")
    t_rebuild = (rebuild / flops).to("s")
    ratio = (t_rebuild / t_read).to("")
    weights_ratio = (weights_only / flops / t_read).to("")
    t_read_shown = t_read.to("us") if t_read < Q_(1, "ms") else t_read
    used = {k: v.value for k, v in cache.inputs.items()}
    vectors, per_value = used["kv_vectors_per_token"], used["kv_bytes_per_value"]
    require(used["sliding_window_layers"].m == 0, "every layer caches the whole context")
    forward = flops_per_param_token.value.to("FLOP/parameter/token")  # a multiply and an add
    one = dict(n_active=Q_(1, "parameter"), training_tokens=Q_(1, "token"), presets=presets)
    train = (get("training_flops").evaluate(**one) / Q_(1, "parameter*token")).to(forward.units)
    fwd, trn = number(forward.m), number(train.m)
    text = (
        (
            f"{model.name} ({quantity(model.params_active)} active per token; {model.layers} "
            f"layers, {model.get('n_kv_heads')} key-value heads of dimension "
            f"{model.get('head_dim')}) decodes a sequence with {int(context.m):,} tokens of "
            "context "
            f"on an {chip.name} ({quantity(flops)} at BF16, {quantity(bandwidth)} of HBM "
            "bandwidth), caching keys and values in BF16. Instead of reading the cache each step, "
            "it could rebuild it by running the whole context through the model again, each "
            f"token attending to those before it; {attention_cost(model_id, presets)}. Take "
            "every FLOP at the chip's peak: how many times longer would rebuilding take than "
            "reading?"
        )
        .replace(" an NVIDIA", " a NVIDIA")
        .replace(" a NVIDIA", " an NVIDIA")
    )
    solution = (
        f"The cache holds a key and a value per layer per key-value head: "
        f"{number(vectors.m)} × {model.layers} × {model.get('n_kv_heads')} × "
        f"{model.get('head_dim')} values × {quantity(per_value)} = "
        f"{quantity(per_token)}, {_size(cache_bytes)} for the context. Reading it "
        f"at {quantity(bandwidth)} takes {quantity(t_read_shown)}.",
        f"Rebuilding runs a forward pass over every context token. In the weights: {fwd} "
        f"FLOP per active parameter per token, {quantity(weights_only)}. In attention: token "
        f"i scores the i tokens before it, so the {int(context.m):,} tokens make about "
        f"{number(context.m**2 / 2)} pairs (half the square of the context) at "
        f"{quantity(pair, 3)} each, {quantity(attention)} "
        f"more. Together {quantity(rebuild)}, which take {quantity(t_rebuild)} at "
        f"{quantity(flops)}.",
        f"The ratio is **{number(ratio.m)}**. In the weights alone it would be "
        f"{number(weights_ratio.m)}, the same at any context (the reads and the weights' "
        "FLOPs both grow in proportion to it); attention's FLOPs grow as its square, so the "
        "longer the context, the more the cache saves. That is why every server keeps the "
        "cache: the memory buys this much compute, the opposite of a reversible network's "
        "trade.",
    )
    mistakes = (
        Mistake(
            weights_ratio,
            "You left attention's FLOPs out of the rebuild: at this context they are a large "
            "part of it.",
        ),
        Mistake(
            ((weights_only + 2 * attention) / flops / t_read).to(""),
            "Rebuilding is causal: each token attends only to those before it, about half of "
            "the context on average, not all of it.",
        ),
        Mistake(
            ((train / forward * weights_only + attention) / flops / t_read).to(""),
            f"You priced the rebuild at {trn} FLOP per parameter per token; it is a "
            f"forward pass only, {fwd}.",
        ),
        Mistake(
            ratio * vectors.m,
            "The cache holds a key and a value (two vectors) per head per layer, at "
            f"{quantity(per_value)} in BF16: you counted half of that.",
        ),
        Mistake(
            ratio / 2,
            f"A BF16 value takes {quantity(per_value)}; you counted it at FP32's size, twice "
            "that, which doubles the cache.",
        ),
    )
    return Draw(
        text=text,
        answer=ratio,
        solution=solution,
        tolerance=0.02,
        mistakes=distinct_mistakes(mistakes, ratio, 0.02),
        hint="Bytes of the cache over bandwidth, against FLOPs of the rebuild over FLOP/s: the "
        "weights' FLOPs and attention's, whose pairs grow as the square of the context.",
    )
