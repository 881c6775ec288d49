"""Fill the HBM with sequences: a memory-bound step then reads everything once, one drain time."""

from __future__ import annotations

import math

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, require
from book.problem_bank.batching._figures import (
    attention_cost,
    cache_derived,
    cache_given,
    chip_name,
    figures,
    size,
    tokens,
    usable_share,
    weight_bytes,
)
from units import Q_

# the chapter's chips (H100, B200), their figures given (reader 19: the lecture states neither
# chip's exactly); the student brings the chapter's rules (bytes per token, the weights' room, a
# step reading everything once), and the answer is about a drain time a step, within a factor
KIND = "estimate"
TITLE = "A server packed to the brim"
USES = ("kv_cache_per_sequence", "memory_time", "hbm_drain_time", "throughput")
LECTURE = "0:00"

SETUPS = (  # (model, precision, chips): servers of the chapter's chips with room to spare
    ("llama_3_1_70b", "bf16", ("h100_sxm", "b200")),
    ("llama_3_1_70b", "fp8", ("h100_sxm", "b200")),
    ("llama_3_1_405b", "fp8", ("b200",)),
    ("qwen3_235b_a22b", "bf16", ("b200",)),
    ("qwen3_235b_a22b", "fp8", ("h100_sxm", "b200")),
)
FACTOR = 1.2  # the slips named below land outside FACTOR² (×1.44) either way
CONTEXTS = (4096, 8192, 16384, 32768)
WORDS = {"bf16": "BF16", "fp8": "FP8"}


def packed(case, share: float = 1.0, weights: bool = True, kv_scale: float = 1.0) -> int:
    """The most sequences whose KV caches fit in ``share`` of the server's HBM beside the
    weights (or in all of it, ``weights`` forgotten), each cache ``kv_scale`` times its size."""
    f = figures(**case)
    room = (share * case["n_chips"] * f["hbm_capacity"]).to("GB") - int(weights) * weight_bytes(f)
    per_sequence = kv_scale * evaluate("kv_cache_per_sequence", **case).to("GB/sequence")
    return math.floor((room / per_sequence).to("sequence").m)


def draw(rng, presets) -> Draw:
    model, precision, chips = rng.choice(SETUPS)
    hardware = rng.choice(chips)
    n = Q_(8, "chip")
    case = dict(
        hardware=hardware,
        model=model,
        precision=precision,
        n_chips=n,
        context_length=Q_(rng.choice(CONTEXTS), "token/sequence"),
        presets=presets,
    )
    f = figures(**case)
    hbm, bandwidth = f["hbm_capacity"], f["mem_bandwidth"]
    weights = weight_bytes(f)
    server_hbm = (n * hbm).to("GB")
    per_sequence = evaluate("kv_cache_per_sequence", **case).to("GB/sequence")
    share, fill = usable_share(presets)
    usable = share * server_hbm
    batch = Q_(packed(case, share), "sequence")
    require(batch >= Q_(16, "sequence"), "the server must hold a real batch")
    at = dict(case, batch_size=batch)
    memory = evaluate("memory_time", **at).to("ms")
    compute = evaluate("compute_time", **at).to("ms")
    require(compute < 0.8 * memory, "a packed step must be memory-bound")
    short = dict(at, context_length=Q_(1, "token/sequence"))  # the weights' FLOPs alone
    compute_shown = evaluate("compute_time", **short).to("ms")
    flop_rate = f["flops"]
    read = evaluate("weight_fetch_time", detailed=True, **at).inputs
    dense = read["routed_weight_share"].value.m == 0
    require(dense or read["expert_read_fraction"].value.m > 0.999, "every expert is read")
    drain = evaluate("hbm_drain_time", **case).to("ms")
    read_bytes = weights + evaluate("kv_cache_per_batch", **at).to("GB")
    per_user = (Q_(1, "token/sequence") / memory).to("token/s/sequence")
    rate = evaluate("throughput", **at).to("token/s")
    chip, name = chip_name(presets, hardware), presets.get("model", model).name
    kv = f["kv_bytes_per_token"].to("kB/token")
    context = case["context_length"]

    text = (
        f"You serve {name} ({quantity(f['n_total'], 4)}) in {WORDS[precision]} on one server of "
        f"{quantity(n)} ({chip}, {quantity(hbm, 3)} of HBM at {quantity(bandwidth, 3)} and "
        f"{quantity(f['flops'], 4)} dense in {WORDS[precision]}, each). "
        f"Every conversation carries {tokens(context)} of context; "
        f"{cache_given(model, presets, kv)} (cached in {WORDS[precision]}), and "
        f"{attention_cost(case['model'], presets)}. You admit conversations until the "
        f"HBM is full ({fill}): the weights plus as many KV caches "
        "as fit. Roughly how many tokens per "
        "second does the server generate, all conversations together? Any answer within a "
        f"factor of {FACTOR:g} is accepted."
    )
    solution = (
        f"Room: the weights take {size(weights)} ({quantity(f['n_total'], 4)} at "
        f"{quantity(f['weight_bytes_per_value'])}); {chip} has {quantity(hbm, 3)} of HBM at "
        f"{quantity(bandwidth, 3)} and {quantity(f['flops'], 4)} of dense "
        f"{WORDS[precision]} math; the server holds {size(server_hbm)}, of which an engine "
        f"fills {number(100 * share)}%, {size(usable)}, "
        f"so {size(usable - weights)} is left. A token of context caches "
        f"{cache_derived(model, presets, kv, f['kv_bytes_per_value'])}, so one "
        f"conversation's cache is {tokens(context)} × {quantity(kv, 4)} = "
        f"{size(per_sequence * Q_(1, 'sequence'))}, and "
        f"the batch is {quantity(batch)} (rounded down).",
        "Each step reads every weight once"
        + ("" if dense else " (a batch this large routes tokens to every expert)")
        + f" and every conversation's cache once: {size(read_bytes)} of the server's "
        f"{size(server_hbm)}, almost all an engine fills. Read by {quantity(n)} at "
        f"{quantity(bandwidth, 3)} each, that takes "
        f"{quantity(memory, 3)}, just under {number(100 * share)}% of the chip's drain time "
        f"(capacity over bandwidth, {quantity(drain, 3)}): the chip count cancels.",
        f"Check the regime: at {quantity(flop_rate, 4)} a chip, two FLOPs per parameter "
        f"for each of the batch's tokens take {quantity(compute_shown, 3)} (attention's own "
        f"FLOPs bring it to {quantity(compute, 3)}), less than the reads, so the step is "
        "memory-bound and lasts the read time.",
        f"Every step gives each of the {number(batch.m)} conversations one token: "
        f"{number(batch.m)} tokens every {quantity(memory, 3)} = **{quantity(rate, 4)}**. "
        "(Each user sees one token per step, about one per drain time: "
        f"{quantity(per_user, 3)}.)",
    )
    bytes_slip = "two" if precision == "fp8" else "one"
    wrong_bytes = dict(
        case,
        weight_precision="bf16" if precision == "fp8" else "fp8",
        kv_precision="bf16" if precision == "fp8" else "fp8",
    )
    mistakes = [
        Mistake(rate / 8, "That is one chip's share: the server's eight chips work together."),
    ]
    for room, weights_kept, why in (
        (share, False, "You filled the HBM with KV caches: the weights take their room first."),
        (1.0, True, f"You filled the whole HBM; {fill}."),
    ):
        at_full = dict(case, batch_size=Q_(packed(case, room, weights_kept), "sequence"))
        mistakes.append(Mistake(evaluate("throughput", **at_full).to("token/s"), why))
    slipped = packed(wrong_bytes, share)
    if slipped > 0:
        at_slip = dict(wrong_bytes, batch_size=Q_(slipped, "sequence"))
        mistakes.append(
            Mistake(
                evaluate("throughput", **at_slip).to("token/s"),
                f"{WORDS[precision]} stores {'one byte' if precision == 'fp8' else 'two bytes'} "
                f"per value, not {bytes_slip}: that changes both the weights' room and the caches.",
            )
        )
    # one vector per KV head: every cache half its size, so twice the batch fits and a step
    # reads the halved caches (the chain rerun: the fit, the step's reads, the regime)
    halved = Q_(packed(case, share, kv_scale=0.5), "sequence")
    halved_reads = (weights + 0.5 * per_sequence * halved) / (n * bandwidth)
    halved_step = max(
        halved_reads.to("ms"), evaluate("compute_time", **dict(case, batch_size=halved)).to("ms")
    )
    mistakes.append(
        Mistake(
            (halved * Q_(1, "token/sequence") / halved_step).to("token/s"),
            "You counted one vector per KV head; each caches a key and a value, so each "
            "conversation's cache is twice what you used and half as many fit.",
        )
    )
    # inside the window or twice its width away (×FACTOR² either way), never between (reader 20)
    for m in mistakes:
        off = max((m.value / rate).to("").m, (rate / m.value).to("").m)
        require(off <= FACTOR or off > FACTOR**2, "each slip lands clear")
    return Draw(
        text=text,
        answer=rate,
        solution=solution,
        tolerance=FACTOR,
        mistakes=distinct_mistakes(mistakes, rate, FACTOR, factor=True),
        hint="How many conversations fit, and how long does a step take to read everything the "
        "chips hold?",
    )
