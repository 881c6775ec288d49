"""Pipelining buys capacity, a bigger scale-up domain buys bandwidth too: pick the deployment."""

from __future__ import annotations

import math

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, lands_clear, require
from derivations import get
from units import Q_

KIND = "design"
TITLE = "Eight-GPU nodes in a pipeline, or one rack?"
USES = (
    "expert_read_fraction",
    "weight_memory",
    "domain_weight_fetch_time",
    "pipelined_decode_latency",
)
LECTURE = "1:03:37"

MODELS = (  # large enough that no node of eight holds them alone: the nodes must pipeline
    ("kimi_k2", "fp8"),
    ("kimi_k2", "bf16"),
    ("deepseek_v3", "fp8"),
    ("deepseek_v3", "bf16"),
    ("llama_3_1_405b", "bf16"),
)
NODES = ("h100_sxm", "h200", "b200", "mi300x", "b300", "mi355x")
RACK = "gb200_nvl72"
TARGETS_MS = (8, 10, 12, 14, 18, 22, 28, 35, 45)
HOPS_MS = (1, 2, 3)  # the lecture: "few ms" per hop between nodes
TOLERANCE = 0.02
MARGIN = 0.05  # the best option is at least this far ahead of every other one
# Every weight is read each step only once the batch routes a token to every expert (at one
# sequence DeepSeek-V3 reads 8 of its 256 experts): an MoE is served at the smallest of these
# batches that leaves under UNREAD of its experts unread on average; a dense model reads all
# its weights at any batch. Contexts are short enough that the batch's KV reads are under
# KV_SHARE of the weight reads, so a token's time is the weights' read plus the hops.
MOE_BATCHES = (128, 256, 512)
DENSE_BATCH = 32
UNREAD = 0.001
CONTEXT = 1024  # tokens per sequence
KV_SHARE = 0.05


def _name(chip) -> str:
    return chip.name.replace(" (per GPU)", "")


def _option(presets, hardware, model, precision, hop, share=0.5):
    """One deployment: the fewest stages whose weights fill at most ``share`` of each GPU's
    HBM, its GPUs and its per-token time (every weight read once, plus the hops between
    stages)."""
    case = dict(hardware=hardware, model=model, precision=precision, presets=presets)
    chip = presets.get("hardware", hardware)
    weights = get("weight_memory").evaluate(**case).to("GB")
    domain = chip.scale_up_domain.to("chip").magnitude
    room = (domain * chip.hbm_capacity * share).to("GB")  # the weights' share, over the domain
    stages = math.ceil((weights / room).to("").magnitude)
    read = get("domain_weight_fetch_time").evaluate(**case).to("ms")
    latency = read  # one stage never leaves its domain: no hop
    if stages > 1:
        latency = get("pipelined_decode_latency").evaluate(
            train_period=read, pipeline_stages=Q_(stages, "stage"), hop_latency=hop
        )
    return dict(
        hardware=hardware,
        chip=chip,
        domain=domain,
        stages=stages,
        gpus=int(stages * domain),
        read=read,
        latency=latency.to("ms"),
        weights=weights,
        room=room,
    )


def _pick(options, target):
    ok = sorted(
        (o for o in options if o["latency"] <= target), key=lambda o: (o["gpus"], o["latency"])
    )
    return ok


def _lead(best, other, target) -> float:
    """How far ``best`` is ahead of ``other``: how far ``other`` misses the target, else the
    GPUs it needs beyond ``best``'s, else (a tie on GPUs) how much slower it is."""
    if other["latency"] > target:
        return (other["latency"] / target).to("").m - 1
    if other["gpus"] != best["gpus"]:
        return other["gpus"] / best["gpus"] - 1
    return (other["latency"] / best["latency"]).to("").m - 1


def _believed(options, hop):
    """The options as the wrong belief sees them: pipelining splits the reads over the stages'
    bandwidth (time / stages), plus the hops."""
    return [
        dict(o, latency=o["read"] / o["stages"] + (o["stages"] * hop if o["stages"] > 1 else 0))
        for o in options
    ]


def _hops(options, hop, fewer: int):
    """The options with ``fewer`` hops left out of each pipeline's count (every hop for a
    large ``fewer``): a student's slip on the hops, rerun through the choice."""
    return [
        dict(o, latency=o["read"] + (max(o["stages"] - fewer, 0) * hop if o["stages"] > 1 else 0))
        for o in options
    ]


def _active_only(options, hop, share):
    """The options as a student who reads only one token's active weights each step sees them
    (``share``: active over total parameters); the stages still hold every weight."""
    return [
        dict(o, latency=o["read"] * share + (o["stages"] * hop if o["stages"] > 1 else 0))
        for o in options
    ]


def draw(rng, presets) -> Draw:
    while True:  # redraw until there is a real trade, clearly won
        model_id, precision = rng.choice(MODELS)
        nodes = rng.sample(NODES, 3)
        bandwidths = {presets.get("hardware", h).hbm_bandwidth.to("TB/s").m for h in nodes}
        if len(bandwidths) < len(nodes):  # two nodes alike in bandwidth would tie exactly
            continue
        hop = Q_(rng.choice(HOPS_MS), "ms")
        target = Q_(rng.choice(TARGETS_MS), "ms")
        options = [_option(presets, h, model_id, precision, hop) for h in (*nodes, RACK)]
        feasible = _pick(options, target)
        # a trade: the rack is fast enough, but so is some node, and some node is not
        if len(feasible) < 2 or all(o["latency"] <= target for o in options):
            continue
        margin = min(_lead(feasible[0], o, target) for o in options if o is not feasible[0])
        # the graded time names the choice: no other option takes nearly as long
        apart = all(
            abs((o["latency"] / feasible[0]["latency"]).to("").m - 1) > 2 * TOLERANCE
            for o in options
            if o is not feasible[0]
        )
        # pipelining matters: every node option needs two stages or more and pays their hops,
        # so the winner (a node: the rack has more GPUs) is graded on the stages' summed reads
        pipelined = all(o["stages"] >= 2 for o in options[:-1])
        # the two slips the graded time must tell from the answer: no hops, and weights filling
        # each GPU's whole HBM (fewer stages, so fewer hops, or another option altogether)
        best = feasible[0]
        greedy = _pick(
            [_option(presets, o["hardware"], model_id, precision, hop, share=1) for o in options],
            target,
        )
        # and the small slips on the hops (none, or one fewer: only those between stages),
        # each rerun through the choice: inside the window, or twice it away and named
        no_hops = _pick(_hops(options, hop, len(options) * 99), target)
        one_fewer = _pick(_hops(options, hop, 1), target)
        slips = [g["latency"] for g in (*greedy[:1], *no_hops[:1])]
        told = all(abs((s / best["latency"]).to("").m - 1) > 2 * TOLERANCE for s in slips)
        told = told and all(
            lands_clear(g["latency"], best["latency"], TOLERANCE) for g in one_fewer[:1]
        )
        # an MoE's slip now that the statement leaves the coverage to the student: reading only
        # a token's active weights, rerun through the choice
        model = presets.get("model", model_id)
        active = None
        if model.get("experts_routed"):
            share = (model.params_active / model.params_total).to("").m
            active = _pick(_active_only(options, hop, share), target)[:1]
            told = told and all(
                lands_clear(a["latency"], best["latency"], TOLERANCE) for a in active
            )
        if margin >= MARGIN and apart and pipelined and told:
            break
    best = feasible[0]
    require(best["stages"] > 1, "the winner pipelines, so the wrong belief about it is listed")
    moe = bool(model.get("experts_routed"))
    if moe:
        read = {
            b: evaluate(
                "expert_read_fraction",
                model=model_id,
                batch_size=Q_(b, "sequence"),
                presets=presets,
            ).to("")
            for b in MOE_BATCHES
        }
        batch = next(b for b in MOE_BATCHES if 1 - read[b].m <= UNREAD)
        unread = 1 - read[batch].m
    else:
        batch = DENSE_BATCH
    context = Q_(CONTEXT, "token/sequence")
    kv = evaluate("kv_bytes_per_token", model=model_id, precision=precision, presets=presets)
    kv_batch = (kv * context * Q_(batch, "sequence")).to("GB")
    require(kv_batch <= KV_SHARE * best["weights"], "the KV reads are small beside the weights")
    answer = best["latency"]
    weights = best["weights"]
    bytes_each = presets.get("precision", precision).bytes_per_value
    specs = "; ".join(
        f"{_name(o['chip'])}: {quantity(o['chip'].hbm_capacity)} at "
        f"{quantity(o['chip'].hbm_bandwidth)}"
        for o in options
    )
    node_names = ", ".join(_name(o["chip"]) for o in options[:-1])
    rack = options[-1]

    size = quantity(model.params_total)
    if moe:
        size = f"{size} in all, {quantity(model.params_active)} active per token"
    text = (
        f"You must serve {model.name} ({size}) in "
        f"{precision.upper()} for an interactive product: each sequence must get a new token "
        f"at least every {quantity(target)}. Each step decodes {number(batch)} sequences of "
        f"about {context_tokens(context)} of context"
        + (
            f"; each token is routed to {number(model.experts_active)} of the "
            f"{number(model.experts_routed)} experts of each MoE layer"
            if moe
            else ""
        )
        + ". Ignore the batch's KV cache, small beside the "
        f"weights. A network hop between nodes costs {quantity(hop)}, and the last pipeline "
        "stage hands the new token back to the first. You may use eight-GPU "
        f"nodes of one kind ({node_names}), pipelined over as many nodes as needed, or one "
        f"{_name(rack['chip'])} rack ({rack['domain']:g} GPUs on one NVLink domain). Each "
        "stage may fill at most half of every GPU's HBM with weights, to leave the rest for "
        f"the KV cache. HBM per GPU and its bandwidth: {specs}. Take the deployment that "
        "meets the target with the fewest GPUs (the faster one if two tie): how long does it "
        "take to make a token? Answer in ms."
    )
    lines = []
    for o in options:
        verdict = "meets" if o["latency"] <= target else "misses"
        half = f"half its HBM holds {quantity(o['room'])}"
        if o["stages"] == 1:
            where = f"one {'rack' if o is rack else 'node'} holds the weights ({half})"
            time = f"reading them takes {quantity(o['read'])}"
        else:
            where = f"{o['stages']} nodes, {o['gpus']} GPUs, hold the weights (each node: {half})"
            time = (
                f"reading them all still takes {quantity(o['read'])}, plus {o['stages']} hops: "
                f"{quantity(o['latency'])}"
            )
        lines.append(f"{_name(o['chip'])}: {where}; {time}. It {verdict} the target.")
    runner = feasible[1] if len(feasible) > 1 else None
    if runner is None:
        close_note = "No other option meets the target."
    elif runner["gpus"] == best["gpus"]:
        close_note = (
            f"{_name(runner['chip'])} ties with it on GPUs ({runner['gpus']}) but takes "
            f"{quantity(runner['latency'])}, so the faster one is the pick."
        )
    else:
        close_note = (
            f"The next option that meets it, {_name(runner['chip'])}, needs {runner['gpus']} GPUs."
        )
    coverage = (
        f" At {number(batch)} sequences a step, each token routed to "
        f"{number(model.experts_active)} of {number(model.experts_routed)} experts, an expert "
        f"goes unread with probability (1 − {number(model.experts_active)}/"
        f"{number(model.experts_routed)})^{number(batch)} = {number(100 * unread, 2)}%: every "
        "weight is read each step, once for the whole batch."
        if moe
        else ""
    )
    solution = (
        f"The weights take {quantity(weights)}: {quantity(model.params_total)} at "
        f"{quantity(bytes_each.to('byte/value'))} in {precision.upper()}.{coverage}",
        "Pipelining divides the weights among the stages, so it decides how many nodes are "
        "needed to hold them. It does not make a token faster: a token visits every stage "
        "in turn, and each stage reads only its share of the weights with only its own GPUs' "
        "bandwidth, so the reads add up to all the weights over one domain's bandwidth. Only "
        "a bigger scale-up domain reads them faster.",
        *lines,
        f"{close_note} The fewest GPUs that meet {quantity(target)}: {_name(best['chip'])}, "
        f"{best['gpus']} GPUs, at **{quantity(answer, 4)}** per token.",
    )
    tolerance = TOLERANCE
    mistakes = [
        Mistake(
            o["latency"],
            f"That is {_name(o['chip'])}'s time, which misses the target: a token reads all the "
            "weights over one domain's bandwidth, however many stages hold them.",
        )
        for o in options
        if o["latency"] > target and o["gpus"] < best["gpus"]
    ]
    mistakes += [
        Mistake(
            o["latency"],
            f"That is {_name(o['chip'])}'s time: it meets the target, but on {o['gpus']} GPUs, "
            f"more than {_name(best['chip'])}'s {best['gpus']}."
            if o["gpus"] > best["gpus"]
            else f"That is {_name(o['chip'])}'s time: it meets the target on as many GPUs, "
            f"{o['gpus']}, but more slowly than {_name(best['chip'])}.",
        )
        for o in feasible[1:]
    ]
    # the wrong belief: pipelining splits the reads over the stages' bandwidth (time / stages)
    believed = _pick(_believed(options, hop), target)
    if believed and believed[0]["hardware"] != best["hardware"]:
        mistakes.append(
            Mistake(
                believed[0]["latency"],
                "You let each stage read its share at the same time as the others; a token "
                "visits the stages in turn, so the reads add up: pipelining holds the weights, "
                "it does not read them faster.",
            )
        )
    mistakes.append(  # listed before the whole-HBM slip: the likelier of two that agree
        Mistake(
            no_hops[0]["latency"],
            "You left out the hops: a token crosses one per stage, "
            f"{best['stages']} × {quantity(hop)}.",
        )
    )
    if one_fewer:
        mistakes.append(
            Mistake(
                one_fewer[0]["latency"],
                "You counted only the hops between stages; the last stage also hands the new "
                f"token back to the first: {best['stages']} hops for {best['stages']} stages.",
            )
        )
    if greedy:
        mistakes.append(
            Mistake(
                greedy[0]["latency"],
                "You let the weights fill each GPU's whole HBM; the rule keeps half of it "
                "for the KV cache, so every option needs more stages than that.",
            )
        )
    for a in active or ():
        mistakes.append(
            Mistake(
                a["latency"],
                "You read only one token's active experts; at "
                f"{number(batch)} sequences a step the batch routes some token to nearly every "
                "expert, so every weight is read each step.",
            )
        )
    if best["stages"] > 1:
        mistakes.append(
            Mistake(
                best["read"] / best["stages"] + best["stages"] * hop,
                "A token visits the stages in turn: their reads add up to all the weights "
                "over one node's bandwidth, not a stage's share.",
            )
        )
    return Draw(
        text=text,
        answer=answer,
        solution=solution,
        tolerance=tolerance,
        mistakes=distinct_mistakes(mistakes, answer, tolerance),
        hint="How long does one token take to pass through all the stages?",
        choices={"hardware": best["hardware"], "pipeline_stages": best["stages"]},
        margin=margin,
    )
