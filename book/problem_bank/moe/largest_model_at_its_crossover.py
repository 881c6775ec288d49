"""A sparser model needs a larger batch to be compute-bound, and its caches grow with it."""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, require, shown
from book.problem_bank.batching._figures import chip_name, figures, size, tokens, windowed
from units import Q_

KIND = "multi"
TITLE = "The largest MoE a rack can serve at its crossover"
USES = ("crossover_batch", "kv_cache_per_batch", "scaleup_memory", "max_total_params")
LECTURE = "32:09"

MODELS = ("deepseek_v3", "kimi_k2", "qwen3_235b_a22b", "gpt_oss_120b")
RACKS = ("gb200_nvl72", "gb300_nvl72")
CONTEXTS = (128, 256, 384, 512, 768, 1024, 1536, 2048)
NO_ATTENTION = Q_(0, "FLOP/token")  # the statement sets attention's own FLOPs aside
TRILLION = Q_(1, "Tparam")


def need(case, total, batch_equation="compute_bound_batch"):
    """Bytes of the weights and of the caches at the batch ``batch_equation`` gives (by default
    the one where the multiplies keep pace with every read, weights and caches), for ``total``
    params, and that batch."""
    here = dict(case, n_total=total)
    batch = evaluate(batch_equation, **here).to("sequence")
    f = figures(**here)
    weights = (total * f["weight_bytes_per_value"] * Q_(1, "value/parameter")).to("TB")
    caches = evaluate("kv_cache_per_batch", **here, batch_size=batch).to("TB")
    return weights, caches, batch


def usable(case):
    """The rack's HBM a serving engine fills: the sourced share (vLLM's default) of all of it."""
    share = case["presets"].parameter["usable_hbm_share"].value
    return (share * evaluate("scaleup_memory", **case)).to("TB")


def largest(case, batch_equation="compute_bound_batch", room=usable):
    """The total parameters whose weights and caches just fill the rack's usable HBM (the batch,
    and so both, grow in proportion to the total, so one evaluation at a trillion scales)."""
    weights, caches, _ = need(case, TRILLION, batch_equation)
    return (room(case) / (weights + caches) * TRILLION).to("Tparam")


def draw(rng, presets) -> Draw:
    while True:  # a context where a batch can catch up with its caches, for a larger sibling
        model, hardware = rng.choice(MODELS), rng.choice(RACKS)
        exact = dict(
            model=model,
            hardware=hardware,
            precision="fp8",
            n_chips=presets.get("hardware", hardware).scale_up_domain,
            context_length=Q_(rng.choice(CONTEXTS), "token/sequence"),
            attention_flops_per_token=NO_ATTENTION,
            presets=presets,
        )
        f = figures(**exact)
        kv = shown(f["kv_bytes_per_token"].to("kB/token"), 3)  # the full-context layers' cache
        context = exact["context_length"]
        window = windowed(presets.get("model", model), kv, context)
        # a sequence's cache: every token in the full-context layers, plus the last window's
        # tokens in the sliding-window layers (gpt-oss: a quarter more at 512 tokens)
        per_sequence = (context * kv + window[2]).to("GB/sequence") if window else context * kv
        # the figures as the statement prints them: the answer follows from them
        case = dict(
            exact,
            n_active=shown(f["n_active"], 3),
            kv_bytes_per_token=(per_sequence / context).to("kB/token"),
            flops=shown(f["flops"].to("PFLOP/s"), 3),
            mem_bandwidth=shown(f["mem_bandwidth"], 3),
            hbm_capacity=shown(f["hbm_capacity"], 3),
        )
        n = case["n_chips"]
        compute_each = (2 * Q_(1, "FLOP/parameter") * case["n_active"] / (n * case["flops"])).to(
            "ns"
        )
        cache_each = (per_sequence * Q_(1, "sequence") / (n * case["mem_bandwidth"])).to("ns")
        # a batch can be compute-bound only while each sequence's multiplies outlast its cache
        # reads; keep a clear margin, so the batch stays finite and the sibling large
        if cache_each > 0.6 * compute_each:
            continue
        total = largest(case)
        blind = largest(case, "crossover_batch")  # the batch that ignores the caches' reads
        # the sibling is larger than its model, and the caches' reads matter to the answer
        if total > 1.2 * f["n_total"].to("Tparam") and blind > 1.1 * total:
            break
    active, own_total = case["n_active"], f["n_total"]
    hbm = evaluate("scaleup_memory", **case).to("TB")
    share = presets.parameter["usable_hbm_share"].value
    room = usable(case)
    weights, caches, batch = need(case, total)
    w1, c1, b1 = need(case, TRILLION)
    at = dict(case, n_total=total, batch_size=batch)
    multiplies = evaluate("compute_time", **at).to("ms")
    weight_read = evaluate("weight_fetch_time", **at).to("ms")
    kv_read = evaluate("kv_fetch_time", **at).to("ms")
    require(
        abs(((weight_read + kv_read) / multiplies).to("").m - 1) < 1e-9,
        "at the answer's batch the multiplies take as long as all the reads",
    )
    require(abs(((weights + caches) / room).to("").m - 1) < 1e-9, "the rack is just full")
    require(total > own_total, "the sibling is larger than the model it starts from")
    bw, cb, bb = need(case, blind, "crossover_batch")
    blind_at = dict(case, n_total=blind, batch_size=bb)
    blind_step = (
        evaluate("weight_fetch_time", **blind_at) + evaluate("kv_fetch_time", **blind_at)
    ).to("ms")
    blind_compute = evaluate("compute_time", **blind_at).to("ms")
    require(blind_step > 1.05 * blind_compute, "the caches-blind batch is clearly memory-bound")
    rack, name = chip_name(presets, hardware), presets.get("model", model).name
    flops, bandwidth = case["flops"], case["mem_bandwidth"]
    rack_flops = (n * flops).to("PFLOP/s")
    rack_bandwidth = (n * bandwidth).to("TB/s")
    w1_read = (w1 / rack_bandwidth).to("ms")
    spare = compute_each - cache_each
    ratio = (total / active).to("").m
    own_ratio = (own_total / active).to("").m

    if window:
        layers, kept, held = window
        full = presets.get("model", model).fields["layers"] - layers
        cache = (
            f"its KV cache takes {quantity(kv, 3)} of context in FP8 in its {number(full)} "
            f"full-attention layers; its {number(layers)} sliding-window layers hold as "
            f"much per token, but only for each sequence's last {quantity(kept)}"
        )
        sum_up = (
            f"{tokens(context)} × {quantity(kv, 3)} in the full-attention layers + "
            f"{quantity(kept)} × {quantity(kv, 3)} in the sliding-window layers"
        )
    else:
        cache = f"its KV cache takes {quantity(kv, 3)} of context in FP8"
        sum_up = f"{tokens(context)} × {quantity(kv, 3)}"
    text = (
        f"{name} has {quantity(active, 3)} active per token, and {cache}. You plan a sibling "
        "with the same attention and "
        "the same active parameters but many more experts, to serve in FP8 on one "
        f"{rack} rack of {quantity(n)} (each: {quantity(case['hbm_capacity'], 3)} of HBM at "
        f"{quantity(bandwidth, 3)}, {quantity(flops, 3)} of dense FP8 math). It will run at the "
        "smallest batch at which a decode step is compute-bound (attention's own FLOPs aside), "
        f"every sequence with {tokens(context)} of context, and the serving engine fills at most "
        f"{number(100 * share.m)}% of each GPU's HBM. At most how many parameters in all can "
        "the sibling have, for its weights and every cache to fit? Answer in trillions of "
        "parameters."
    )
    solution = (
        "A decode step reads every weight once (a large batch touches every expert) and every "
        "sequence's cache, and it multiplies only the active weights, two FLOPs per weight "
        "for each sequence. It is compute-bound once the multiplies take as long as all "
        f"those reads. The rack does {quantity(rack_flops, 3)} and reads "
        f"{quantity(rack_bandwidth, 3)}.",
        f"Per sequence: the multiplies take twice {quantity(active, 3)} over "
        f"{quantity(rack_flops, 3)} = {quantity(compute_each, 3)}, and its cache, "
        f"{sum_up} = {size(per_sequence * Q_(1, 'sequence'))}, "
        f"takes {quantity(cache_each, 3)} to read, which leaves {quantity(spare, 3)} per "
        "sequence to pay for the weight reads.",
        f"A trillion parameters are {size(w1)} of FP8 weights, read in {quantity(w1_read, 3)}; "
        f"paying for that at {quantity(spare, 3)} a sequence takes a batch of "
        f"{quantity(b1, 4)}, whose caches take {size(c1)}: {size(w1 + c1)} in all for each "
        "trillion parameters. The batch and its caches grow in proportion to the total.",
        f"The rack holds {quantity(n)} × {quantity(case['hbm_capacity'], 3)} = {size(hbm)}, "
        f"of which the engine fills {number(100 * share.m)}%, {size(room)}, "
        f"so the sibling can have at most **{quantity(total, 3)}** "
        f"({name} itself has {quantity(own_total.to('Tparam'), 3)}), at a batch of "
        f"{quantity(batch, 4)}. Check: a step then reads the weights in "
        f"{quantity(weight_read, 3)} and the caches in {quantity(kv_read, 3)}, "
        f"{quantity(weight_read + kv_read, 3)} in all, just the time its multiplies take. "
        "The batch that only keeps pace with the weight reads "
        f"would allow {quantity(blind, 3)}, but its step would read for "
        f"{quantity(blind_step, 3)} against {quantity(blind_compute, 3)} of multiplies: "
        "memory-bound. "
        f"This is a bound, not a design: {number(ratio, 2)} parameters in all for each active "
        f"one ({name}: {number(own_ratio, 2)}) and {quantity(batch, 4)} in flight on one rack "
        "is no deployment anyone runs. It says how far sparsity can go before the caches of the "
        "batch it needs, not the weights, fill the rack.",
    )
    mistakes = [
        Mistake(
            evaluate(
                "max_total_params", **dict(case, hbm_capacity=share * case["hbm_capacity"])
            ).to("Tparam"),
            "You left no room for the caches: the batch, and with it the KV cache, grows with "
            "the total parameters.",
        ),
    ]
    own_batch = evaluate("compute_bound_batch", **case).to("sequence")
    own_caches = evaluate("kv_cache_per_batch", **case, batch_size=own_batch).to("TB")
    if own_caches < room:
        mistakes.append(
            Mistake(
                ((room - own_caches) / (w1 / TRILLION)).to("Tparam"),
                f"You kept {name}'s own batch: a sparser sibling needs a larger batch to keep "
                "its multiplies up with its weight reads, and more caches with it.",
            )
        )
    mistakes.append(
        Mistake(
            blind,
            "You set the batch where the multiplies keep pace with the weight reads alone; a "
            "step reads every sequence's cache too, so that batch is still memory-bound.",
        )
    )
    if window:
        short = largest(dict(case, kv_bytes_per_token=kv))
        # the window's slip and the caches-blind batch's must not share a value (reader 17)
        apart = min(abs((short / v).to("").m - 1) for v in (total, blind))
        require(apart >= 0.06, "the full-layers-only slip lands clear of the others")
        mistakes.append(
            Mistake(
                short,
                f"You counted the cache of the {number(full)} full-attention layers only: the "
                f"{number(layers)} sliding-window layers hold each sequence's last "
                f"{quantity(kept)} too.",
            )
        )
    mistakes.append(
        Mistake(
            largest(dict(case, weight_precision="bf16")),
            "FP8 stores a weight in one byte, not two.",
        )
    )
    mistakes.append(
        Mistake(
            largest(case, room=lambda c: evaluate("scaleup_memory", **c).to("TB")),
            f"You filled all of the HBM; the engine fills at most {number(100 * share.m)}% of it.",
        )
    )
    # twice the window from the answer, one diagnosis a value
    mistakes = [m for m in mistakes if abs((m.value / total).to("").m - 1) >= 0.06]
    return Draw(
        text=text,
        answer=total,
        solution=solution,
        tolerance=0.03,
        mistakes=distinct_mistakes(mistakes, total, 0.03),
        hint="What does a decode step read besides the weights? Write the compute-bound batch "
        "as a function of the total parameters; the bytes of weights and caches are then both "
        "proportional to the total.",
    )
