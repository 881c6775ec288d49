"""Chapter A: batch size, cost and latency (the roofline of one decode step).

A decode step gives each of ``B`` sequences one new token. It cannot finish before the chips
have done its multiplies (compute time) nor before they have read every weight and the batch's
KV cache from HBM (memory time). Everything in this chapter follows from that lower bound.

>>> from derivations import get
>>> round(get("crossover_batch").evaluate(hardware="h100_sxm", model="deepseek_v3").m)
5356
"""

import sympy as sp

from derivations.core import Equation, Source, register
from derivations.derivation import Derivation, given, rename, rewrite, solve, substitute
from derivations.notation import (
    arch_params_total,
    attention_flops_per_token,
    batch_size,
    chips_to_fit,
    compute_bound_batch,
    compute_time,
    context_length,
    cost_per_token,
    crossover_batch,
    d_ff_expert,
    d_model,
    decode_tokens_per_sequence,
    dense_crossover_batch,
    dense_layers,
    expert_read_fraction,
    expert_saturation_batch,
    expert_skip_probability,
    experts_active,
    experts_routed,
    experts_touched,
    ffn_matrices,
    flops,
    flops_per_param_token,
    hbm_capacity,
    hbm_drain_time,
    kv_bytes,
    kv_bytes_per_token,
    kv_fetch_time,
    mem_bandwidth,
    memory_time,
    n_active,
    n_chips,
    n_layers,
    n_total,
    price_per_chip_hour,
    ride_time,
    ridge_intensity,
    routed_expert_params,
    routed_weight_share,
    step_flops,
    step_rent,
    step_time,
    throughput,
    tokens_per_step,
    train_period,
    vectors_per_token,
    wait_time,
    weight_bytes,
    weight_bytes_per_value,
    weight_fetch_time,
    worst_case_latency,
)

CHAPTER = "batching"
LECTURE = "Lecture section A, batch size, cost and latency"
# Timestamps: the chapter marks of the episode (lecture.md) and the summary mark for the
# FLOPs-to-bandwidth ratio (seed 000); no finer timestamps are known, so none are claimed.
SECTION_A = "00:00-32:09"
RATIO_AT = "15:16"

B, F, W, C = batch_size.sym, flops.sym, mem_bandwidth.sym, hbm_capacity.sym
N_t, N_a, b, k = n_total.sym, n_active.sym, weight_bytes_per_value.sym, kv_bytes_per_token.sym
L, n, c_f, p = context_length.sym, n_chips.sym, flops_per_param_token.sym, price_per_chip_hour.sym
tau = train_period.sym
u = decode_tokens_per_sequence.sym
nu = vectors_per_token.sym

FLOP_, M_W, M_KV = step_flops.sym, weight_bytes.sym, kv_bytes.sym
RENT, TOKENS = step_rent.sym, tokens_per_step.sym

a_dec = attention_flops_per_token.sym
E_r, k_e = experts_routed.sym, experts_active.sym
s_r, phi = routed_weight_share.sym, expert_read_fraction.sym
q_skip = expert_skip_probability.sym

COMPUTE = B * (c_f * u * N_a + a_dec * L) / (n * F)
WEIGHTS = N_t * (1 - s_r * (1 - phi)) * b / (n * W)
KV = B * L * k / (n * W)
# max(E_r, 1) only keeps 0/0 out of a dense model (E_r = k = 0: no routed experts, phi = 0);
# every MoE preset has E_r >= 1, where it is E_r itself.
# The power is kept as exp(u B nu log(...)): sympy would otherwise split ((E - k) / E)^B into
# two powers that overflow at large B before they cancel. The exponent counts routing draws:
# u B tokens a step, nu = 1 vector each (a count of sequences cannot be an exponent).
SKIP = 1 - k_e / sp.Max(E_r, 1)
MISS = sp.exp(u * B * nu * sp.log(SKIP))
ROUTED = (n_layers.sym - dense_layers.sym) * E_r * ffn_matrices.sym * d_model.sym * d_ff_expert.sym

routed_expert_params_eq = register(
    Equation(
        id="routed_expert_params",
        title="Parameters in routed experts",
        lhs=routed_expert_params,
        rhs=ROUTED,
        chapter=CHAPTER,
        source=Source("model configs (facts.md, Models)", "", "the routed-expert term of N_total"),
        assumptions=(
            "every expert is a gated MLP (three matrices of d by d_e)",
            "the first n_dense layers have a dense MLP and no experts",
        ),
        summary="The weights a token may skip: every routed expert of every MoE layer. "
        "Attention, shared experts, dense layers and embeddings are read whatever the batch.",
    )
)

routed_weight_share_eq = register(
    Equation(
        id="routed_weight_share",
        title="Share of the weights in routed experts",
        lhs=routed_weight_share,
        rhs=routed_expert_params.sym / arch_params_total.sym,
        chapter=CHAPTER,
        source=Source("model configs (facts.md, Models)"),
        assumptions=(
            "the share counted from the architecture applies to the stated total (published "
            "totals are rounded: Kimi K2's 1T is 1.03T by its config)",
        ),
        summary="0 for a dense model; about 0.97 for DeepSeek-V3, whose always-read weights "
        "(attention, the shared expert, three dense layers, embeddings) are a few percent.",
    )
)

expert_read_fraction_eq = register(
    Equation(
        id="expert_read_fraction",
        title="Share of routed experts a batch touches",
        lhs=expert_read_fraction,
        rhs=1 - MISS,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "all experts are read once the batch is large"),
        assumptions=(
            "each token picks its k experts uniformly at random, independently of the others",
            "a dense model has no routed experts (E_r = 0): the share is 0",
        ),
        derivation=Derivation(
            given(
                expert_read_fraction.sym,
                1 - q_skip ** (u * B * nu),
                "one token's vector skips a given expert with probability q, all u B nu of a "
                "step (u = 1 token per sequence, nu = 1 vector per token) with q^(u B nu); the "
                "experts not skipped are touched",
            ),
            rewrite(
                expert_read_fraction.sym,
                1 - sp.exp(u * B * nu * sp.log(q_skip)),
                "the same power as an exponential, which stays finite at any batch",
            ),
            substitute(
                {q_skip: SKIP},
                expert_read_fraction.sym,
                1 - MISS,
                "a token picks k of the E_r experts: it skips a given one with q = 1 - k/E_r",
            ),
        ),
        summary="The active share of the routed experts at one sequence, close to 1 once the "
        "batch is a few times the expert-saturation batch.",
        # shown as the lecture writes it, with the routing draws counted: the chance that all u B
        # tokens (nu = 1 vector each) skip an expert
        display=((MISS, (1 - k_e / E_r) ** (u * B * nu), ((sp.Max(E_r, 1), E_r),)),),
    )
)

experts_touched_eq = register(
    Equation(
        id="experts_touched",
        title="Distinct routed experts a batch touches",
        lhs=experts_touched,
        rhs=E_r * expert_read_fraction.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "every expert is used by some sequence in the batch"),
        assumptions=("as for the share of routed experts touched",),
        summary="k experts at one sequence (8 of 256 for DeepSeek-V3); all E_r at large batch.",
    )
)

expert_saturation_batch_eq = register(
    Equation(
        id="expert_saturation_batch",
        title="Batch that routes as many tokens as there are experts",
        lhs=expert_saturation_batch,
        rhs=E_r / (k_e * u * nu),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "all weights are read at large batch"),
        assumptions=("tokens route uniformly over the routed experts",),
        derivation=Derivation(
            given(
                u * B * nu * k_e / E_r,
                1,
                "the B sequences route u B nu vectors a step (u = 1 token each, nu = 1 vector "
                "per token), making u B nu k picks over E_r experts: one each",
            ),
            solve(B, E_r / (k_e * u * nu), "solve for the batch"),
            rename(expert_saturation_batch.sym, E_r / (k_e * u * nu), "name it"),
        ),
        summary="Below it, each new sequence brings new experts to read, so an MoE's cost per "
        "token stays flat; above it, the weights are all read and batching pays.",
    )
)

compute_time_eq = register(
    Equation(
        id="compute_time",
        title="Compute time of one decode step",
        lhs=compute_time,
        rhs=COMPUTE,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "t_compute = B N_active / FLOPs"),
        assumptions=(
            "each of the B sequences gets one token per step",
            "each new token's attention costs a_dec FLOPs per token of context (QK and AV; "
            "MLA with its weights absorbed): not negligible past L_attn = c_fwd N_active / a_dec, "
            "about 4.4K tokens for DeepSeek-V3 and 54K for Llama 3.1 70B",
            "attention runs at the same dense peak as the matrix multiplies",
            "the chips run at their dense peak FLOP/s: a lower bound on the time",
        ),
        derivation=Derivation(
            given(compute_time.sym, FLOP_ / (n * F), "a step's FLOPs shared by n chips of F each"),
            substitute(
                {FLOP_: B * (c_f * u * N_a + a_dec * L)},
                compute_time.sym,
                COMPUTE,
                "the B sequences get u = 1 new token each, which costs c_fwd FLOPs per active "
                "parameter, plus a_dec FLOPs of attention per token of its context",
            ),
        ),
        summary="Every active parameter does one multiply-add per token, and every new token "
        "attends to its whole context; spread over n chips.",
    )
)

weight_fetch_time_eq = register(
    Equation(
        id="weight_fetch_time",
        title="Weight-fetch time of one decode step",
        lhs=weight_fetch_time,
        rhs=WEIGHTS,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "the N_total term of t_mem"),
        assumptions=(
            "attention, shared experts, dense layers and embeddings are read every step",
            "a routed expert is read once if any token of the batch is routed to it, not at all "
            "otherwise; the lecture's 'all weights are read' is the large-batch limit",
            "the touched experts' bytes are spread evenly over the chips (the average chip)",
            "HBM bandwidth is reached in full: a lower bound on the time",
        ),
        derivation=Derivation(
            given(
                weight_fetch_time.sym, M_W / (n * W), "the weights' bytes read by n chips of W each"
            ),
            substitute(
                {M_W: (N_t * (1 - s_r) + N_t * s_r * phi) * b},
                weight_fetch_time.sym,
                (N_t * (1 - s_r) + N_t * s_r * phi) * b / (n * W),
                "the always-read share 1 - s of the weights, plus the routed share s of which "
                "the batch touches the fraction phi; b bytes per parameter",
            ),
            rewrite(weight_fetch_time.sym, WEIGHTS, "collect N_total b"),
        ),
        summary="A dense model reads every weight each step. An MoE reads its always-read "
        "weights plus the experts its batch touches: about N_active at one sequence, every "
        "weight once the batch is a few times the expert-saturation batch.",
    )
)

kv_fetch_time_eq = register(
    Equation(
        id="kv_fetch_time",
        title="KV-fetch time of one decode step",
        lhs=kv_fetch_time,
        rhs=KV,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "the B len_ctx kv_bytes term of t_mem"),
        assumptions=("each sequence reads its whole context's KV cache every step",),
        derivation=Derivation(
            given(
                kv_fetch_time.sym, M_KV / (n * W), "the KV cache's bytes read by n chips of W each"
            ),
            substitute(
                {M_KV: B * L * k},
                kv_fetch_time.sym,
                KV,
                "each of the B sequences caches k bytes for each of its L tokens",
            ),
        ),
        summary="Each sequence reads its own KV cache: this cost grows with batch and context.",
    )
)

memory_time_eq = register(
    Equation(
        id="memory_time",
        title="Memory time of one decode step",
        lhs=memory_time,
        rhs=weight_fetch_time.sym + kv_fetch_time.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "t_mem = (N_total bytes + B len_ctx kv_bytes) / mem_bw"),
        assumptions=("weights and KV cache share the same HBM bandwidth",),
        derivation=Derivation(
            given(
                memory_time.sym,
                (N_t * (1 - s_r * (1 - phi)) * b + B * L * k) / (n * W),
                "the lecture's t_mem: all bytes read in a step over the bandwidth of n chips "
                "(the weights' bytes those the batch touches)",
            ),
            rewrite(memory_time.sym, WEIGHTS + KV, "split the bytes into weights and KV cache"),
            substitute(
                {WEIGHTS: weight_fetch_time.sym, KV: kv_fetch_time.sym},
                memory_time.sym,
                weight_fetch_time.sym + kv_fetch_time.sym,
                "name the two terms: weight-fetch time and KV-fetch time",
            ),
        ),
        summary="Weight fetch (flat in B once every expert is touched) plus KV fetch "
        "(linear in B).",
    )
)

step_time_eq = register(
    Equation(
        id="step_time",
        title="Step time: the roofline bound",
        lhs=step_time,
        rhs=sp.Max(compute_time.sym, memory_time.sym),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "T >= max(t_compute, t_mem)"),
        assumptions=(
            "compute and memory traffic overlap perfectly, so the slower one sets the time",
            "communication between chips is ignored",
        ),
        summary="A step takes at least as long as its compute and at least as long as its reads.",
    )
)

cost_per_token_eq = register(
    Equation(
        id="cost_per_token",
        title="Cost per generated token",
        lhs=cost_per_token,
        rhs=n * p * step_time.sym / (u * B),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "cost/token = T / B x $/GPU-s"),
        assumptions=(
            "the chips are rented for the whole step and shared by the B sequences",
            "each sequence receives one token per step",
        ),
        derivation=Derivation(
            given(cost_per_token.sym, RENT / TOKENS, "a step's rent shared by the tokens it makes"),
            substitute(
                {RENT: n * p * step_time.sym},
                cost_per_token.sym,
                n * p * step_time.sym / TOKENS,
                "n chips rented at p for the step time T",
            ),
            substitute(
                {TOKENS: u * B},
                cost_per_token.sym,
                n * p * step_time.sym / (u * B),
                "u = 1 token for each of the B sequences",
            ),
        ),
        summary="Rent for the step over the tokens it makes: a hyperbola in B down to a floor.",
    )
)

crossover_batch_eq = register(
    Equation(
        id="crossover_batch",
        title="Crossover batch size B*",
        lhs=crossover_batch,
        rhs=F * N_t * b / (W * c_f * u * N_a),
        chapter=CHAPTER,
        source=Source(LECTURE, RATIO_AT, "B* = (FLOPs / mem_bw) x (N_total / N_active)"),
        assumptions=(
            "the KV-fetch term is ignored (short contexts)",
            "attention FLOPs are ignored: the context is well below L_attn = c_fwd N_active / "
            "a_dec (the short-context limit, like the KV term)",
            "the batch touches every expert (phi = 1): true at B*, which is many times the "
            "expert-saturation batch on every preset (a test checks it), so compute = weight "
            "fetch has this one root",
            "weights are stored at b_w bytes per value; F is the dense rate at the compute "
            "precision",
        ),
        derivation=Derivation(
            given(
                c_f * u * B * N_a / (n * F),
                N_t * b / (n * W),
                "at the crossover the compute time equals the weight-fetch time, with "
                "every expert read and no attention FLOPs",
            ),
            rewrite(
                c_f * u * B * N_a / F,
                N_t * b / W,
                "multiply both sides by n: the chip count cancels",
            ),
            solve(B, F * N_t * b / (W * c_f * u * N_a), "solve for the batch size"),
            rename(
                crossover_batch.sym,
                sp.Mul(F * b / (c_f * u * W), N_t / N_a, evaluate=False),
                "group: the chip's multiplies per byte of weight for one token per sequence, "
                "times sparsity; FLOP rate over bandwidth alone is right only when a "
                "multiply-add's FLOPs equal a weight's bytes (BF16)",
            ),
        ),
        summary="Below B* a step is limited by reading weights; above it, by compute. "
        "It is the chip's multiplies per byte of weight times the model's sparsity, whatever "
        "the model's size or precision.",
    )
)

B_KV = F * N_t * b / (W * (c_f * u * N_a + a_dec * L) - F * L * k)
compute_bound_batch_eq = register(
    Equation(
        id="compute_bound_batch",
        title="Batch from which decode is compute-bound, KV cache included",
        lhs=compute_bound_batch,
        rhs=B_KV,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "t_compute = t_weights + t_KV, solved for B"),
        assumptions=(
            "the batch touches every expert (phi = 1): true when B is many times the "
            "expert-saturation batch E_r / k, as at B* (a test checks it on the presets)",
            "every sequence of the batch holds L tokens of context, each read once per step",
            "compute and memory reads overlap: the step is the larger of the two",
        ),
        derivation=Derivation(
            given(
                B * (c_f * u * N_a + a_dec * L) / (n * F),
                N_t * b / (n * W) + B * L * k / (n * W),
                "the step turns compute-bound where compute time equals memory time: all "
                "weights read once (every expert) plus each sequence's KV cache",
            ),
            rewrite(
                B * ((c_f * u * N_a + a_dec * L) / F - L * k / W),
                N_t * b / W,
                "multiply by n (the chip count cancels) and gather the terms in B",
            ),
            solve(B, B_KV, "solve for the batch size"),
            rename(compute_bound_batch.sym, B_KV, "name it"),
        ),
        when_negative="no batch makes the step compute-bound at this context: each "
        "sequence's KV reads take longer than its compute (the context is past the KV = "
        "compute crossover, kv_compute_crossover_context)",
        summary="The lecture's B* with the KV cache counted: each sequence adds its KV reads "
        "to the memory side, so the batch must be larger before compute catches up; at zero "
        "context it is B*, and past the KV = compute context no batch is large enough.",
    )
)

B_DENSE = F * b / (c_f * u * W)
dense_crossover_batch_eq = register(
    Equation(
        id="dense_crossover_batch",
        title="Multiplies per byte of weight: B* of a dense model",
        lhs=dense_crossover_batch,
        rhs=B_DENSE,
        chapter=CHAPTER,
        source=Source(LECTURE, RATIO_AT, "B* = (FLOPs / mem_bw) x sparsity, at any precision"),
        assumptions=(
            "the model is dense (N_total = N_active), or this is the factor B* multiplies by "
            "sparsity",
            "weights are stored at b bytes per value and multiplied at the matching FLOP/s "
            "(BF16 weights at BF16 FLOP/s, FP8 at FP8)",
            "at BF16, c / b = 2 FLOP / 2 bytes = 1 FLOP per byte, so this equals the ridge "
            "point F / W; at FP8 the FLOP/s double and the bytes halve, so it is unchanged",
        ),
        derivation=Derivation(
            given(
                crossover_batch.sym,
                F * N_t * b / (W * c_f * u * N_a),
                "the crossover batch",
            ),
            substitute(
                {N_t: N_a},
                crossover_batch.sym,
                F * b / (W * c_f * u),
                "a dense model: every parameter is active",
            ),
            rename(dense_crossover_batch.sym, B_DENSE, "name it"),
        ),
        summary="The precision-free crossover factor: the same at BF16 and at FP8 on a chip whose "
        "FP8 rate is twice its BF16 rate. B* is this times the sparsity.",
    )
)

ridge_intensity_eq = register(
    Equation(
        id="ridge_intensity",
        title="Ridge point: FLOPs per byte",
        lhs=ridge_intensity,
        rhs=F / W,
        chapter=CHAPTER,
        source=Source(LECTURE, RATIO_AT, "FLOPs/mem_bw, about 300, stable A100 to B100"),
        assumptions=("dense FLOP/s at the compute precision",),
        summary="How many FLOPs a kernel must do per byte it reads to be compute-bound.",
    )
)

hbm_drain_time_eq = register(
    Equation(
        id="hbm_drain_time",
        title="HBM drain time",
        lhs=hbm_drain_time,
        rhs=C / W,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "Rubin: 288 GB / 20 TB/s, about 15 ms"),
        assumptions=("the whole HBM is read at full bandwidth",),
        summary="A step that reads all of HBM takes this long: the natural period of the train.",
    )
)

chips_to_fit_eq = register(
    Equation(
        id="chips_to_fit",
        title="Chips to hold weights and KV cache",
        lhs=chips_to_fit,
        rhs=(N_t * b + B * L * k) / C,
        chapter=CHAPTER,
        source=Source(
            "Lecture section B, MoE layout",
            "32:09-47:12",
            "Hopper 8 GPUs = 640 GB; Blackwell rack 10-20 TB => 5T model + KV",
        ),
        assumptions=("activations and fragmentation take no HBM",),
        derivation=Derivation(
            given(chips_to_fit.sym, (M_W + M_KV) / C, "the bytes to store over one chip's HBM"),
            substitute(
                {M_W: N_t * b, M_KV: B * L * k},
                chips_to_fit.sym,
                (N_t * b + B * L * k) / C,
                "the weights' bytes and the batch's KV bytes, as in the fetch times",
            ),
        ),
        summary="The serving footprint; the default chip count rounds it up to whole chips.",
    )
)

worst_case_latency_eq = register(
    Equation(
        id="worst_case_latency",
        title="Worst-case latency of the batch train",
        lhs=worst_case_latency,
        rhs=2 * tau,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "a batch departs every 20 ms; worst case 40 ms"),
        assumptions=(
            "a batch departs every period, whether full or not",
            "a step fits within one period",
        ),
        derivation=Derivation(
            given(
                worst_case_latency.sym,
                wait_time.sym + ride_time.sym,
                "latency is the wait for a departure plus the ride",
            ),
            substitute(
                {wait_time.sym: tau},
                worst_case_latency.sym,
                tau + ride_time.sym,
                "a request that just missed a train waits one full period",
            ),
            substitute(
                {ride_time.sym: tau},
                worst_case_latency.sym,
                2 * tau,
                "the step it rides takes up to one period",
            ),
        ),
        summary="Waiting for the next train plus riding it: twice the period.",
    )
)

throughput_eq = register(
    Equation(
        id="throughput",
        title="Throughput of one replica",
        lhs=throughput,
        rhs=u * B / step_time.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "throughput = B / step"),
        assumptions=("each sequence receives one token per step",),
        derivation=Derivation(
            given(throughput.sym, TOKENS / step_time.sym, "tokens per step over seconds per step"),
            substitute(
                {TOKENS: u * B},
                throughput.sym,
                u * B / step_time.sym,
                "u = 1 token for each of the B sequences",
            ),
        ),
        summary="Tokens per step over seconds per step.",
    )
)

# -- throughput per sequence (the lecture's "64 B tokens/s") -----------------------------------
from derivations.notation import sequence_token_rate  # noqa: E402

register(
    Equation(
        id="throughput_per_sequence",
        title="Tokens per second per sequence when a step reads all of HBM",
        lhs=sequence_token_rate,
        rhs=u / hbm_drain_time.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "throughput = B / step ~ 64 B (1/15.6 ms)"),
        assumptions=(
            "each sequence receives one token per step",
            "a step lasts one HBM drain time (the lecture's period: reading HBM twice per step "
            "is pointless)",
        ),
        derivation=Derivation(
            given(sequence_token_rate.sym, throughput.sym / B, "the replica's rate per sequence"),
            substitute(
                {throughput.sym: u * B / step_time.sym},
                sequence_token_rate.sym,
                u / step_time.sym,
                "the throughput is u B tokens per step: B cancels",
            ),
            substitute(
                {step_time.sym: hbm_drain_time.sym},
                sequence_token_rate.sym,
                u / hbm_drain_time.sym,
                "a step that reads all of HBM once lasts one drain time",
            ),
        ),
        summary="A replica makes B tokens per step, so its throughput is B over the step time: "
        "with the step at one HBM drain time, each sequence gets one token per drain time.",
    )
)
