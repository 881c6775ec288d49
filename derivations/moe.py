"""Chapter B: mixture-of-experts layers laid out on racks.

Expert parallelism spreads a layer's experts over the chips of a scale-up domain; every token
is sent to its experts and back (an all-to-all). Inside one rack that traffic rides the fast
scale-up network; once a layer spans racks, part of it crosses the slower scale-out network,
which is why one rack bounds the size of an expert layer.

>>> from derivations import get
>>> get("multi_rack_slowdown").evaluate()
<Quantity(4.0, 'dimensionless')>
"""

import sympy as sp

from derivations.core import Equation, Source, register
from derivations.derivation import Derivation, given, rewrite, substitute
from derivations.notation import (
    activation_bytes_per_value,
    alltoall_bytes,
    alltoall_time,
    batch_size,
    combine_bytes,
    combine_bytes_per_value,
    compute_cost_floor,
    cost_per_token,
    d_model,
    decode_tokens_per_sequence,
    dispatch_bytes,
    expert_parallel_chips,
    experts_active,
    experts_per_chip,
    experts_routed,
    flops,
    flops_per_param_token,
    hardware_scale_out_penalty,
    hbm_capacity,
    home_rack_share,
    multi_rack_slowdown,
    n_active,
    n_chips,
    offrack_copies,
    offrack_fraction,
    offrack_slowdown,
    once_per_rack_slowdown,
    onrack_slowdown,
    price_per_chip_hour,
    rack_missed_share,
    racks_spanned,
    scale_out_bandwidth,
    scale_out_penalty,
    scale_up_bandwidth,
    scale_up_domain,
    scaleup_hbm,
    scaleup_param_capacity,
    step_time,
    vectors_per_token,
    weight_bytes_per_value,
)

CHAPTER = "moe"
LECTURE = "Lecture section B, MoE layout"
SECTION_B = "32:09-47:12"

n_ep, k, d = expert_parallel_chips.sym, experts_active.sym, d_model.sym
b, b_w = activation_bytes_per_value.sym, weight_bytes_per_value.sym
b_c = combine_bytes_per_value.sym
r, f, pi = racks_spanned.sym, offrack_fraction.sym, scale_out_penalty.sym
S_up, S_out, B = scale_up_bandwidth.sym, scale_out_bandwidth.sym, batch_size.sym
u, nu = decode_tokens_per_sequence.sym, vectors_per_token.sym

register(
    Equation(
        id="experts_per_chip",
        title="Experts per chip under expert parallelism",
        lhs=experts_per_chip,
        rhs=experts_routed.sym / n_ep,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_B, "256 experts on 64 GPUs => 4 experts/GPU"),
        assumptions=("experts are spread evenly, none replicated",),
        summary="Each chip holds an equal share of a layer's routed experts.",
    )
)

register(
    Equation(
        id="alltoall_bytes_per_token",
        title="All-to-all bytes per token per MoE layer",
        lhs=alltoall_bytes,
        rhs=nu * k * d * (b + b_c),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_B, "all-to-all dispatch + combine"),
        assumptions=(
            "a token's activation (nu = 1 vector of d values) goes to each of its k experts and "
            "comes back",
            "dispatch travels at the compute precision (b_act) and combine at the combine "
            "precision (b_comb): DeepSeek-V3 dispatches in FP8 and combines in BF16",
            "shared experts sit with the token and send nothing",
        ),
        derivation=Derivation(
            given(
                alltoall_bytes.sym,
                dispatch_bytes.sym + combine_bytes.sym,
                "a token is dispatched to its experts and their outputs combined",
            ),
            substitute(
                {dispatch_bytes.sym: nu * k * d * b, combine_bytes.sym: nu * k * d * b_c},
                alltoall_bytes.sym,
                nu * k * d * (b + b_c),
                "each way moves one activation of d values per expert, at that way's precision",
            ),
        ),
        summary="Dispatch and combine each move one activation per routed expert, each at its "
        "own precision.",
    )
)

register(
    Equation(
        id="offrack_fraction",
        title="Share of expert traffic that leaves the rack",
        lhs=offrack_fraction,
        rhs=1 - 1 / r,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_B, "two racks => half the tokens leave the rack"),
        assumptions=(
            "experts are spread evenly over r racks and tokens route uniformly at random",
        ),
        derivation=Derivation(
            given(f, 1 - home_rack_share.sym, "traffic leaves unless the expert is at home"),
            substitute(
                {home_rack_share.sym: 1 / r},
                f,
                1 - 1 / r,
                "one rack in r holds the expert a token is routed to",
            ),
        ),
        summary="A token's expert sits in its own rack with probability 1/r.",
    )
)

T_ONE = u * B * alltoall_bytes.sym / (n_ep * S_up)  # u = 1 token per sequence per step
SLOWDOWN = sp.Max(1 - f, f * pi)
s_on, s_off = onrack_slowdown.sym, offrack_slowdown.sym
register(
    Equation(
        id="multi_rack_slowdown",
        title="Slowdown of an expert layer spread over racks",
        lhs=multi_rack_slowdown,
        rhs=SLOWDOWN,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_B, "one rack bounds the size of an expert layer"),
        assumptions=(
            "the batch's traffic is spread evenly over the n_EP chips",
            "off-rack bytes move kappa times slower than on-rack bytes, per chip and per direction",
            "on-rack bytes ride the scale-up links and off-rack bytes the network ports at the "
            "same time (separate links), so the layer waits for the slower of the two",
        ),
        derivation=Derivation(
            given(
                multi_rack_slowdown.sym,
                sp.Max(s_on, s_off),
                "on-rack and off-rack bytes move at once on separate links: the slower sets "
                "the pace",
            ),
            substitute(
                {s_on: 1 - f, s_off: f * pi},
                multi_rack_slowdown.sym,
                SLOWDOWN,
                "against the one-rack time, the on-rack share takes 1 - f and the off-rack "
                "share f at kappa times less bandwidth",
            ),
        ),
        summary="With two racks and the lecture's 8x penalty, half the traffic is 8x slower: "
        "the layer's all-to-all takes several times as long, so one rack bounds a layer.",
    )
)

DEEPSEEK_V3 = "DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report' (arXiv 2412.19437)"
COPIES = (r - 1) * (1 - (1 - 1 / r) ** k)
p_miss = rack_missed_share.sym
register(
    Equation(
        id="offrack_copies",
        title="Copies of a token that leave its rack, one per other rack",
        lhs=offrack_copies,
        rhs=COPIES,
        chapter=CHAPTER,
        source=Source(
            DEEPSEEK_V3,
            "",
            "section 3.2.2: each token 'will first be transmitted via IB to the GPUs with the "
            "same in-node index on its target nodes', then 'forwarded via NVLink to specific "
            "GPUs that host their target experts'; section 2.1.2: 'each token will be sent to "
            "at most M nodes' (M = 4)",
        ),
        assumptions=(
            "dispatch sends one copy to each other rack that holds at least one of the token's "
            "k experts, and a chip there fans it out over NVLink; combine sums that rack's "
            "outputs first and returns one copy",
            "each of the k experts sits in a given rack with probability 1/r, independently "
            "(drawing k distinct experts of many, evenly spread, changes the count very little)",
            "a node-limited router (DeepSeek-V3's, M = 4) caps the copies at M; uniform routing "
            "stays below that up to a few racks",
            "with chips in place of racks, the same count gives the distinct other chips a token's "
            "experts land on",
        ),
        derivation=Derivation(
            given(
                offrack_copies.sym,
                (r - 1) * (1 - p_miss),
                "each of the r - 1 other racks gets one copy unless it holds none of the "
                "token's experts",
            ),
            substitute(
                {p_miss: (1 - 1 / r) ** k},
                offrack_copies.sym,
                COPIES,
                "each of the k experts misses a given rack with probability 1 - 1/r",
            ),
        ),
        summary="Sending once per other rack, a token crosses the network about once at two "
        "racks, not k/2 times: the count the lecture's per-expert all-to-all overstates.",
    )
)

ONCE = sp.Max(1, COPIES * pi / k)
register(
    Equation(
        id="once_per_rack_slowdown",
        title="Slowdown over racks when dispatch sends once per rack",
        lhs=once_per_rack_slowdown,
        rhs=ONCE,
        chapter=CHAPTER,
        source=Source(
            DEEPSEEK_V3,
            "",
            "section 3.2.2: IB and NVLink traffic 'fully overlapped'; NVLink 160 GB/s, "
            "'roughly 3.2 times that of IB (50 GB/s)'",
        ),
        assumptions=(
            "as for the off-rack copies",
            "every one of the k copies still crosses NVLink once (the home rack's directly, the "
            "others after landing), so the on-rack share takes the one-rack time; a copy that "
            "lands on its expert's own chip makes this slightly pessimistic",
            "the off-rack copies ride the network ports kappa times slower, at the same time as "
            "NVLink, so the layer waits for the slower of the two",
        ),
        derivation=Derivation(
            given(
                once_per_rack_slowdown.sym,
                sp.Max(s_on, s_off),
                "on-rack and off-rack bytes move at once on separate links: the slower sets "
                "the pace",
            ),
            substitute(
                {s_on: sp.Integer(1), s_off: offrack_copies.sym * pi / k},
                once_per_rack_slowdown.sym,
                sp.Max(1, offrack_copies.sym * pi / k),
                "against the one-rack time (k copies on NVLink), NVLink still carries all k "
                "and the network c_out of them at kappa times less bandwidth",
            ),
            substitute(
                {offrack_copies.sym: COPIES},
                once_per_rack_slowdown.sym,
                ONCE,
                "the expected copies that leave the rack",
            ),
        ),
        summary="Sent once per rack, two racks' all-to-all at the lecture's 8x takes about the "
        "one-rack time: deduplicated dispatch, not the penalty, decides whether a layer can "
        "span racks.",
    )
)

register(
    Equation(
        id="alltoall_time",
        title="All-to-all time of one MoE layer",
        lhs=alltoall_time,
        rhs=T_ONE * SLOWDOWN,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_B, "scale-out ~8x slower than scale-up"),
        assumptions=(
            "as for the multi-rack slowdown",
            "each of the B sequences sends u = 1 token through the layer per step",
            "every one of a token's k copies leaves its chip, as with a kernel that sends each "
            "expert its own copy: the home chip's k/n_EP stay, and a kernel that sends each chip "
            "a token once sends the off-rack-copies count with n_EP chips for r racks "
            "(slightly fewer on a rack, far fewer on a node of a few GPUs)",
            "routing loads every chip equally; the busiest chip's excess lengthens its all-to-all",
            "the scale-up domain is switched: any chip reaches any other at full bandwidth "
            "(a TPU torus is not)",
        ),
        derivation=Derivation(
            given(
                alltoall_time.sym,
                T_ONE * multi_rack_slowdown.sym,
                "the batch's bytes spread over n_EP chips at the per-direction scale-up "
                "bandwidth, times the slowdown of leaving the rack",
            ),
            substitute(
                {multi_rack_slowdown.sym: SLOWDOWN},
                alltoall_time.sym,
                T_ONE * SLOWDOWN,
                "the slower of the on-rack and off-rack shares",
            ),
        ),
        summary="The one-rack time, times the larger of the on-rack share and the off-rack "
        "share inflated by the scale-out penalty.",
    )
)

register(
    Equation(
        id="hardware_scale_out_penalty",
        title="Scale-up over scale-out bandwidth of a chip",
        lhs=hardware_scale_out_penalty,
        rhs=S_up / S_out,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_B, "scale-out ~8x slower than scale-up NVLink"),
        assumptions=(
            "both per chip and per direction (NVLink's 900 GB/s on an H100 counts both "
            "directions: 450 GB/s each way; a 400 Gb/s port is 50 GB/s each way)",
            "the scale-up domain is switched; on a torus (TPU pods) a chip's link bandwidth is "
            "not its all-to-all bandwidth, so the ratio overstates the gap",
        ),
        summary="The presets' own figure for the lecture's round 8x, like for like.",
    )
)

register(
    Equation(
        id="scaleup_memory",
        title="HBM of one scale-up domain",
        lhs=scaleup_hbm,
        rhs=scale_up_domain.sym * hbm_capacity.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_B, "Hopper 8 GPUs = 640 GB; Blackwell rack 10-20 TB"),
        assumptions=("every chip's HBM is usable",),
        summary="What one expert-parallel domain can hold without pipelining.",
    )
)

register(
    Equation(
        id="max_total_params",
        title="Total parameters one scale-up domain can hold",
        lhs=scaleup_param_capacity,
        rhs=scaleup_hbm.sym / b_w,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_B, "total params limited by scale-up size"),
        assumptions=(
            "the whole domain's HBM holds weights (an upper bound: KV needs room too)",
            "weights are stored at the weight precision, b_w bytes per value",
        ),
        summary="Total parameters are bounded by the memory of the domain an expert layer fits in.",
    )
)

c_f, N_a, p, F, n = (
    flops_per_param_token.sym,
    n_active.sym,
    price_per_chip_hour.sym,
    flops.sym,
    n_chips.sym,
)
register(
    Equation(
        id="compute_cost_floor",
        title="Cost per token once compute-bound",
        lhs=compute_cost_floor,
        rhs=c_f * N_a * p / F,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_B, "active params limited by compute cost"),
        assumptions=("the batch is past the crossover and KV reads are not the bottleneck",),
        derivation=Derivation(
            given(
                cost_per_token.sym, n * p * step_time.sym / (u * B), "chapter A's cost per token"
            ),
            substitute(
                {
                    step_time.sym: c_f * u * B * N_a / (n * F),
                    cost_per_token.sym: compute_cost_floor.sym,
                },
                compute_cost_floor.sym,
                # unevaluated, so the page shows B and n before they cancel in the next step
                sp.Mul(
                    n,
                    p,
                    sp.Mul(c_f, u, B, N_a, sp.Pow(n * F, -1)),
                    sp.Pow(u * B, -1),
                    evaluate=False,
                ),
                "past the crossover the step takes its compute time",
            ),
            rewrite(compute_cost_floor.sym, c_f * N_a * p / F, "batch and chips cancel"),
        ),
        summary="Active parameters set the floor of the cost per token; total parameters only "
        "need room.",
    )
)
