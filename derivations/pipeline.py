"""Chapters C and D: pipeline parallelism, and why it saves memory capacity but not KV.

Pipelining cuts the layers into P stages on different racks. Weights shrink by P per chip; the
KV cache does not, because P micro-batches must be in flight to keep every stage busy. Cross-rack
traffic is small next to the experts' all-to-all, so pipelining is cheap in bandwidth, but it adds
a hop of latency per stage and, in training, a fill-and-drain bubble.

>>> from derivations import get
>>> get("pipeline_bubble_fraction").evaluate(pipeline_stages=4, microbatches=4)
<Quantity(0.428571..., 'dimensionless')>
"""

from derivations.core import Equation, Source, register
from derivations.derivation import Derivation, given, rewrite, substitute
from derivations.notation import (
    activation_bytes_per_value,
    batch_size,
    bubble_fraction,
    context_length,
    crossover_batch,
    d_model,
    dense_layers,
    domain_weight_fetch_time,
    expert_parallel_chips,
    experts_active,
    hop_count,
    hop_latency,
    kv_bytes_per_token,
    layers_per_stage,
    mem_bandwidth,
    memory_per_chip,
    micro_batch,
    microbatch_time,
    microbatches,
    moe_layers_per_stage,
    n_layers,
    n_total,
    pipeline_stages,
    pipeline_step_time,
    pipelined_latency,
    scale_out_bandwidth,
    scale_out_penalty,
    scale_up_bandwidth,
    scale_up_domain,
    scaleout_time_per_token,
    scaleup_time_per_token,
    traffic_time_ratio,
    train_period,
    vectors_per_token,
    weight_bytes,
    weight_bytes_per_value,
)

CHAPTER = "pipeline"
LECTURE_C = "Lecture section C, pipeline parallelism"
LECTURE_D = "Lecture section D, why pipelining is not wise"
SECTION_C = "47:12-1:03:37"
SECTION_D = "1:03:37-1:18:59"

E, P, b_mu = expert_parallel_chips.sym, pipeline_stages.sym, micro_batch.sym
N_t, b, L, k = n_total.sym, weight_bytes_per_value.sym, context_length.sym, kv_bytes_per_token.sym
b_act = activation_bytes_per_value.sym
B = batch_size.sym

register(
    Equation(
        id="micro_batch_size",
        title="Micro-batch of one stage",
        lhs=micro_batch,
        rhs=crossover_batch.sym,
        chapter=CHAPTER,
        source=Source(LECTURE_D, SECTION_D, "b ~ 300 x sparsity (the 20 ms train)"),
        assumptions=("each stage runs at the crossover batch, the cheapest batch that is fast",),
        summary="Each stage still needs a compute-bound batch of its own.",
    )
)

MEMORY = N_t * b / (E * P) + b_mu * L * k / E
register(
    Equation(
        id="memory_per_gpu",
        title="HBM per chip with expert and pipeline parallelism",
        lhs=memory_per_chip,
        rhs=MEMORY,
        chapter=CHAPTER,
        source=Source(LECTURE_D, SECTION_D, "c_mem = N_total/(E P) + b len_ctx bytes/E"),
        assumptions=(
            "weights and KV are spread evenly over E chips per stage and P stages",
            "P micro-batches are in flight, one per stage",
        ),
        derivation=Derivation(
            given(
                memory_per_chip.sym,
                (N_t * b + B * L * k) / (E * P),
                "the weights and the whole batch's KV cache spread over E P chips",
            ),
            substitute(
                {B: P * b_mu},
                memory_per_chip.sym,
                (N_t * b + P * b_mu * L * k) / (E * P),
                "keeping P stages busy takes P micro-batches in flight",
            ),
            rewrite(
                memory_per_chip.sym,
                MEMORY,
                "P cancels from the KV term: pipelining shrinks weights, not KV",
            ),
        ),
        summary="Weights per chip fall as 1/P; the KV cache per chip does not move.",
    )
)

register(
    Equation(
        id="layers_per_stage",
        title="Layers per pipeline stage",
        lhs=layers_per_stage,
        rhs=n_layers.sym / P,
        chapter=CHAPTER,
        source=Source(LECTURE_C, SECTION_C, "cut along layers"),
        assumptions=("stages get equal numbers of layers",),
        summary="The layers divided evenly among the stages.",
    )
)

register(
    Equation(
        id="moe_layers_per_stage",
        title="MoE layers per pipeline stage",
        lhs=moe_layers_per_stage,
        rhs=(n_layers.sym - dense_layers.sym) / P,
        chapter=CHAPTER,
        source=Source(LECTURE_C, SECTION_C, "cut along layers"),
        assumptions=(
            "stages get equal numbers of MoE layers",
            "dense layers (DeepSeek-V3's first 3) have no experts and so no all-to-all",
        ),
        summary="Only the layers with experts do an all-to-all; the dense layers are left out.",
    )
)

t_up, t_out = scaleup_time_per_token.sym, scaleout_time_per_token.sym
S_up, S_out, pi = scale_up_bandwidth.sym, scale_out_bandwidth.sym, scale_out_penalty.sym
ell, kk, d = moe_layers_per_stage.sym, experts_active.sym, d_model.sym
nu = vectors_per_token.sym
register(
    Equation(
        id="scaleup_scaleout_ratio",
        title="Scale-up over scale-out time per stage",
        lhs=traffic_time_ratio,
        rhs=2 * kk * ell / pi,
        chapter=CHAPTER,
        source=Source(
            LECTURE_C, SECTION_C, "t_scaleup/t_scaleout = (1/8) 2 k layers_per_stage >= 1"
        ),
        assumptions=(
            "inside a stage each MoE layer's all-to-all moves 2 k activations per token (nu = 1 "
            "vector of d values each); dense layers move none",
            "between stages one activation per token crosses the scale-out network",
        ),
        derivation=Derivation(
            given(traffic_time_ratio.sym, t_up / t_out, "the two times per token"),
            substitute(
                {t_up: ell * 2 * kk * nu * d * b_act / S_up, t_out: nu * d * b_act / S_out},
                traffic_time_ratio.sym,
                (ell * 2 * kk * nu * d * b_act / S_up) / (nu * d * b_act / S_out),
                "all-to-all bytes of the stage's MoE layers over scale-up; one activation over "
                "scale-out",
            ),
            substitute(
                {S_out: S_up / pi},
                traffic_time_ratio.sym,
                (ell * 2 * kk * nu * d * b_act / S_up) / (nu * d * b_act * pi / S_up),
                "scale-out is pi times slower",
            ),
            rewrite(
                traffic_time_ratio.sym, 2 * kk * ell / pi, "activation size and bandwidth cancel"
            ),
        ),
        summary="At or above one, the hop between stages costs less than the experts' own "
        "traffic: cutting between layers is cheap, even one MoE layer per rack.",
    )
)

register(
    Equation(
        id="pipelined_decode_latency",
        title="Per-token latency with pipeline hops",
        lhs=pipelined_latency,
        rhs=train_period.sym + P * hop_latency.sym,
        chapter=CHAPTER,
        source=Source(LECTURE_D, SECTION_D, "per-hop latency few ms; 4 stages: 20 -> 30 ms"),
        assumptions=(
            "a token passes through every stage once per step, one hop each",
            "the step itself is unchanged: the stages split it",
            "the hop latency is the lecture's guess ('a few ms, give or take 10x'); a real "
            "GPU -> NIC -> switch -> NIC -> GPU hop of one activation takes 10-100 microseconds, "
            "which makes the added latency negligible next to the step",
        ),
        derivation=Derivation(
            given(
                pipelined_latency.sym,
                train_period.sym + hop_count.sym * hop_latency.sym,
                "the step's period plus the time spent hopping",
            ),
            substitute(
                {hop_count.sym: P},
                pipelined_latency.sym,
                train_period.sym + P * hop_latency.sym,
                "one hop out of each of the P stages, the last back to the first",
            ),
        ),
        summary="Pipelining adds a hop's latency per stage to every generated token.",
    )
)

register(
    Equation(
        id="domain_weight_fetch_time",
        title="Weight-fetch time of a whole scale-up domain",
        lhs=domain_weight_fetch_time,
        rhs=N_t * b / (scale_up_domain.sym * mem_bandwidth.sym),
        chapter=CHAPTER,
        source=Source(LECTURE_D, SECTION_D, "weight fetch = N_total / (scale-up size x HBM BW)"),
        assumptions=("the weights are spread over the domain and read in parallel",),
        derivation=Derivation(
            given(
                domain_weight_fetch_time.sym,
                weight_bytes.sym / (scale_up_domain.sym * mem_bandwidth.sym),
                "the weights' bytes read by all the domain's chips at once",
            ),
            substitute(
                {weight_bytes.sym: N_t * b},
                domain_weight_fetch_time.sym,
                N_t * b / (scale_up_domain.sym * mem_bandwidth.sym),
                "every parameter stored as one value of b_w bytes (the weight precision)",
            ),
        ),
        summary="A bigger scale-up domain reads the weights faster: it buys bandwidth; "
        "pipelining only buys capacity.",
    )
)

register(
    Equation(
        id="weight_memory",
        title="Bytes of the weights",
        lhs=weight_bytes,
        rhs=N_t * b,
        chapter=CHAPTER,
        source=Source(LECTURE_C, SECTION_C, "1T-param model needs 1 TB (at 1 byte/param)"),
        assumptions=("every parameter is stored at b_w bytes, the weight precision",),
        summary="Parameters times bytes per stored weight.",
    )
)

m, t_mu = microbatches.sym, microbatch_time.sym
register(
    Equation(
        id="pipeline_bubble_fraction",
        title="Training bubble of a fill-and-drain pipeline",
        lhs=bubble_fraction,
        rhs=(P - 1) / (m + P - 1),
        chapter=CHAPTER,
        source=Source(LECTURE_C, SECTION_C, "training bubble: fill/drain"),
        assumptions=(
            "a GPipe-style schedule: m micro-batches, each taking t_mu per stage",
            "forward and backward are lumped together (1F1B has the same bubble)",
        ),
        derivation=Derivation(
            given(
                bubble_fraction.sym,
                (pipeline_step_time.sym - m * t_mu) / pipeline_step_time.sym,
                "the idle share of a stage's time",
            ),
            substitute(
                {pipeline_step_time.sym: (m + P - 1) * t_mu},
                bubble_fraction.sym,
                ((m + P - 1) * t_mu - m * t_mu) / ((m + P - 1) * t_mu),
                "the last micro-batch leaves the last stage P - 1 slots after the first",
            ),
            rewrite(bubble_fraction.sym, (P - 1) / (m + P - 1), "t_mu cancels"),
        ),
        summary="P - 1 idle slots out of m + P - 1: more micro-batches shrink the bubble.",
    )
)

# -- training memory: weights, gradients, optimizer state, activations -------------------------
from derivations.notation import (  # noqa: E402
    activation_bytes_factor,
    activation_memory,
    full_activation_memory,
    n_layers,
    optimizer_bytes,
    train_grad_bytes,
    train_weight_bytes,
    training_memory,
    training_memory_recompute,
    training_state_memory,
)

ZERO = (
    "Rajbhandari et al. 2020, 'ZeRO: Memory Optimizations Toward Training Trillion Parameter "
    "Models' (arXiv 1910.02054), section 3.1"
)
KORTHIKANTI = (
    "Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models' "
    "(arXiv 2205.05198), section 4"
)

b_w, b_g, b_o = train_weight_bytes.sym, train_grad_bytes.sym, optimizer_bytes.sym
STATE = N_t * (b_w + b_g + b_o)
register(
    Equation(
        id="training_state_memory",
        title="Training state: weights, gradients and optimizer",
        lhs=training_state_memory,
        rhs=STATE,
        chapter=CHAPTER,
        source=Source(ZERO, "", "mixed-precision Adam: 2 + 2 + 12 = 16 bytes per parameter"),
        assumptions=(
            "mixed precision: BF16 working weights (2 bytes) and gradients (2 bytes)",
            "Adam keeps an FP32 master copy and two FP32 moments: 12 bytes per parameter",
            "one replica, unsharded: ZeRO or FSDP divides this by the data-parallel chips",
            "every parameter is trained, all experts included (N_total, not N_active)",
        ),
        derivation=Derivation(
            given(
                training_state_memory.sym,
                N_t * b_w + N_t * b_g + N_t * b_o,
                "weights, gradients and optimizer state, each per parameter",
            ),
            rewrite(training_state_memory.sym, STATE, "collect the bytes per parameter"),
        ),
        summary="16 bytes per parameter at the usual mixed precision: eight times the BF16 "
        "weights a server holds.",
    )
)

c_act, layers = activation_bytes_factor.sym, n_layers.sym
FULL_ACT = nu * layers * B * L * c_act * d
register(
    Equation(
        id="full_activation_memory",
        title="Activation memory without recomputation",
        lhs=full_activation_memory,
        rhs=FULL_ACT,
        chapter=CHAPTER,
        source=Source(KORTHIKANTI, "", "activations per layer s b h (34 + 5 a s / h) bytes"),
        assumptions=(
            "a GPT-style layer with 16-bit activations stores about 34 bytes per residual value "
            "per token (its inputs, the MLP's 4d hidden activations, dropout masks)",
            "attention scores are not stored (FlashAttention recomputes them): the 5 a s / h "
            "term is dropped",
            "no tensor or sequence parallelism: one replica's whole batch",
        ),
        summary="Every layer keeps about 34 bytes per residual-stream value of every token until "
        "the backward pass: linear in layers, batch and context.",
    )
)

STATE_SYM = training_state_memory.sym
register(
    Equation(
        id="training_memory",
        title="Training memory without recomputation",
        lhs=training_memory,
        rhs=STATE_SYM + full_activation_memory.sym,
        chapter=CHAPTER,
        source=Source(ZERO, "", "model states plus residual states (activations)"),
        assumptions=("temporary buffers and fragmentation are left out",),
        summary="The training state plus every stored activation.",
    )
)

register(
    Equation(
        id="training_memory_recompute",
        title="Training memory with full recomputation",
        lhs=training_memory_recompute,
        rhs=STATE_SYM + activation_memory.sym,
        chapter=CHAPTER,
        source=Source(KORTHIKANTI, "", "full recomputation stores 2 s b h bytes per layer"),
        assumptions=(
            "only each layer's input is stored (d values of b bytes per token) and the rest is "
            "recomputed in the backward pass: one more forward pass of compute",
            "temporary buffers and fragmentation are left out",
        ),
        summary="Recomputing each layer from its input shrinks activations about 17-fold at "
        "BF16, for a third more compute (8 N D instead of 6 N D).",
    )
)
