"""Chapter F: long context and API prices.

The KV cache is the one memory cost that neither batching nor pipelining amortises. This chapter
counts it from each model's architecture (and the parameters alongside it), finds the context
lengths at which it overtakes compute and weight reads, and reads the public price lists
backwards: a price kink implies KV bytes per token, the output/input price ratio implies how
memory-bound decode is, and a cache's lifetime implies the memory tier that holds it.

>>> from derivations import get
>>> get("kv_bytes_per_token").evaluate(model="llama_3_1_70b")
<Quantity(327.68, 'kilobyte / token')>
"""

from derivations.core import Equation, Source, register
from derivations.derivation import Derivation, given, rename, rewrite, solve, substitute
from derivations.notation import (
    arch_params_active,
    arch_params_total,
    attention_flops_per_token,
    attention_params,
    batch_size,
    cache_breakeven_time,
    cache_bytes,
    cache_discount,
    cache_hold_cost,
    cache_read_price,
    cache_readback_cost,
    cache_recompute_cost,
    context_length,
    d_ff,
    d_ff_expert,
    d_model,
    decode_attention_context,
    decode_prefill_ratio,
    decode_time_per_token,
    decode_tokens_per_sequence,
    dense_layers,
    embedding_matrices,
    embeddings_active,
    expert_read_fraction,
    experts_active,
    experts_routed,
    experts_shared,
    fast_batch_ratio,
    fast_batch_size,
    fast_price_multiplier,
    fast_speed_multiplier,
    fast_step_time,
    ffn_matrices,
    flops,
    flops_per_multiply_add,
    flops_per_param_token,
    global_layers,
    gqa_attention_flops,
    gqa_attention_params,
    gqa_kv_values,
    head_dim,
    implied_kv_bytes_per_token,
    input_price,
    kv_bytes_per_token,
    kv_bytes_per_value,
    kv_compute_context,
    kv_lora_rank,
    kv_values_per_token,
    kv_vectors_per_token,
    kv_weight_context,
    mem_bandwidth,
    mla_attention_params,
    mla_decode_attention_flops,
    mla_kv_values,
    mla_prefill_attention_flops,
    n_active,
    n_chips,
    n_heads,
    n_kv_heads,
    n_layers,
    n_total,
    output_price,
    prefill_attention_context,
    prefill_attention_flops,
    prefill_flops,
    prefill_flops_per_token,
    prefill_time_per_token,
    price_kink_context,
    price_per_chip_hour,
    q_lora_rank,
    qk_nope_head_dim,
    qk_rope_head_dim,
    routed_weight_share,
    sequences_per_token,
    sliding_window_layers,
    step_time,
    tier_bandwidth,
    tier_cache_bytes,
    tier_capacity,
    tier_drain_time,
    tier_fill_fraction,
    tier_price,
    tier_retrieval_time,
    v_head_dim,
    vectors_per_token,
    vocab,
    weight_bytes_per_value,
)

CHAPTER = "long_context"
LECTURE = "Lecture section F, long context and API pricing"
SECTION_F = "1:33:02-2:04:02"
LECTURE_A = "Lecture section A, batch size, cost and latency"
SECTION_A = "00:00-32:09"

B, L, k, b = batch_size.sym, context_length.sym, kv_bytes_per_token.sym, weight_bytes_per_value.sym
b_kv = kv_bytes_per_value.sym
F, W, n, c_f = flops.sym, mem_bandwidth.sym, n_chips.sym, flops_per_param_token.sym
N_t, N_a, p = n_total.sym, n_active.sym, price_per_chip_hour.sym
nu, nu_kv = vectors_per_token.sym, kv_vectors_per_token.sym
u, sigma = decode_tokens_per_sequence.sym, sequences_per_token.sym
layers, d, h, h_kv, d_h = n_layers.sym, d_model.sym, n_heads.sym, n_kv_heads.sym, head_dim.sym
m_ff, V = ffn_matrices.sym, vocab.sym

# -- KV bytes per token ------------------------------------------------------------------------

register(
    Equation(
        id="global_attention_layers",
        title="Layers that cache the whole context",
        lhs=global_layers,
        rhs=layers - sliding_window_layers.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "unique KV layers"),
        assumptions=(
            "a sliding-window layer caches a fixed window, so per token of a long context it "
            "adds nothing",
        ),
        summary="Only global-attention layers grow with the context; sliding-window layers do "
        "not (gpt-oss alternates the two).",
    )
)

GQA_VALUES = nu_kv * global_layers.sym * h_kv * d_h
register(
    Equation(
        id="gqa_kv_values_per_token",
        title="KV values per token: grouped-query attention",
        lhs=gqa_kv_values,
        rhs=GQA_VALUES,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "unique KV layers x 2 x d_head x n_kv_heads"),
        assumptions=(
            "every KV head caches two vectors per token (one key and one value) of d_h values",
            "MHA is the case h_KV = h; MQA is the case h_KV = 1",
        ),
        summary="A key and a value per KV head per global layer.",
    )
)

MLA_VALUES = nu * layers * (kv_lora_rank.sym + qk_rope_head_dim.sym)
register(
    Equation(
        id="mla_kv_values_per_token",
        title="KV values per token: multi-head latent attention",
        lhs=mla_kv_values,
        rhs=MLA_VALUES,
        chapter=CHAPTER,
        source=Source("DeepSeek-V2/V3 technical reports (MLA)", "", "c_KV and k_rope cached"),
        assumptions=(
            "each layer caches nu = 1 vector per token: one compressed latent shared by all "
            "heads, with one rotary key",
        ),
        summary="One latent and one shared rotary key per layer, whatever the head count.",
    )
)

register(
    Equation(
        id="kv_bytes_per_token",
        title="KV-cache bytes per token of context",
        lhs=kv_bytes_per_token,
        rhs=kv_values_per_token.sym * b_kv,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "bytes_per_token"),
        assumptions=(
            "every cached value is stored at the KV-cache precision (which may differ from "
            "the weights')",
        ),
        summary="The values a token leaves in the cache, at b_KV bytes each; the values come from "
        "the GQA or the MLA count, by the model's attention type.",
    )
)

# -- parameters from the architecture ----------------------------------------------------------

GQA_ATTN = d * d_h * (2 * h + 2 * h_kv)
register(
    Equation(
        id="gqa_attention_params",
        title="Attention weights per layer: GQA",
        lhs=gqa_attention_params,
        rhs=GQA_ATTN,
        chapter=CHAPTER,
        source=Source("model configs (facts.md, Models)"),
        assumptions=("no biases or norm weights (under 0.1% of any preset)",),
        derivation=Derivation(
            given(
                gqa_attention_params.sym,
                d * h * d_h + 2 * d * h_kv * d_h + h * d_h * d,
                "query, key and value projections from d, and the output projection back to d",
            ),
            rewrite(gqa_attention_params.sym, GQA_ATTN, "collect d d_h"),
        ),
        summary="Q and output projections scale with the query heads, K and V with the KV heads.",
    )
)

r_q, r_kv, d_rope, d_nope, d_v = (
    q_lora_rank.sym,
    kv_lora_rank.sym,
    qk_rope_head_dim.sym,
    qk_nope_head_dim.sym,
    v_head_dim.sym,
)
register(
    Equation(
        id="mla_attention_params",
        title="Attention weights per layer: MLA",
        lhs=mla_attention_params,
        rhs=d * r_q
        + r_q * h * (d_nope + d_rope)
        + d * (r_kv + d_rope)
        + r_kv * h * (d_nope + d_v)
        + h * d_v * d,
        chapter=CHAPTER,
        source=Source("deepseek-ai/DeepSeek-V3 inference/model.py (MLA)"),
        assumptions=("no norm weights (under 0.1%)",),
        summary="Queries through a rank-r_Q bottleneck, keys and values from a rank-r_KV latent "
        "plus a shared rotary key, and the output projection.",
    )
)

MOE_LAYERS = layers - dense_layers.sym
MLP_DENSE = dense_layers.sym * m_ff * d * d_ff.sym
ROUTER = MOE_LAYERS * d * experts_routed.sym
ARCH_TOTAL = (
    layers * attention_params.sym
    + MLP_DENSE
    + MOE_LAYERS * (experts_routed.sym + experts_shared.sym) * m_ff * d * d_ff_expert.sym
    + ROUTER
    + embedding_matrices.sym * nu * V * d
)
ARCH_ACTIVE = (
    layers * attention_params.sym
    + MLP_DENSE
    + MOE_LAYERS * (experts_active.sym + experts_shared.sym) * m_ff * d * d_ff_expert.sym
    + ROUTER
    + embeddings_active.sym * nu * V * d
)
PARAM_ASSUMPTIONS = (
    "every MLP is gated (three matrices of d by its hidden width)",
    "input and output embeddings are separate matrices of V by d (nu = 1 row of d values per "
    "vocabulary token), or one shared matrix when the model ties them (tied_embeddings = true)",
    "norms and biases are left out (under 0.1% of every preset)",
)
register(
    Equation(
        id="params_total",
        title="Total parameters from the architecture",
        lhs=arch_params_total,
        rhs=ARCH_TOTAL,
        chapter=CHAPTER,
        source=Source("model configs (facts.md, Models)"),
        assumptions=PARAM_ASSUMPTIONS,
        summary="Attention in every layer, a dense MLP in the dense layers, every routed and "
        "shared expert plus a router in the MoE layers, and two embedding matrices (one if tied).",
    )
)
register(
    Equation(
        id="params_active",
        title="Active parameters per token from the architecture",
        lhs=arch_params_active,
        rhs=ARCH_ACTIVE,
        chapter=CHAPTER,
        source=Source("model configs (facts.md, Models)"),
        assumptions=(*PARAM_ASSUMPTIONS, "a token uses k routed experts and every shared expert"),
        summary="As the total, but each MoE layer counts only the k experts a token is routed to; "
        "some publishers leave the input embedding (a lookup, no multiplies) out.",
    )
)

# -- attention FLOPs ---------------------------------------------------------------------------

c_mac, a_dec, a_pre = (
    flops_per_multiply_add.sym,
    attention_flops_per_token.sym,
    (prefill_attention_flops.sym),
)
GQA_FLOPS = nu_kv * c_mac * h * d_h * global_layers.sym
register(
    Equation(
        id="gqa_attention_flops",
        title="Attention FLOPs per context token: GQA",
        lhs=gqa_attention_flops,
        rhs=GQA_FLOPS,
        chapter=CHAPTER,
        source=Source("model configs (facts.md, Models)", "", "QK^T and AV of every query head"),
        assumptions=(
            "every query head scores each cached key (d_h multiply-adds) and weights each "
            "cached value (d_h more): nu_KV = 2 vectors per context token; grouping KV heads "
            "saves bytes, not FLOPs",
            "sliding-window layers attend to a fixed window, so per token of a long context "
            "only the global layers count",
        ),
        derivation=Derivation(
            given(
                gqa_attention_flops.sym,
                nu * c_mac * h * d_h * global_layers.sym + nu * c_mac * h * d_h * global_layers.sym,
                "scores (q . k) against a context token's key and the weighted sum of its "
                "value, one vector each (nu = 1 per token), per query head and global layer",
            ),
            substitute(
                {nu: nu_kv / 2},
                gqa_attention_flops.sym,
                GQA_FLOPS,
                "add the two: the key and the value are the nu_KV = 2 vectors a token caches",
            ),
        ),
        summary="Decode and prefill alike: two multiply-adds of d_h per query head, per cached "
        "token, per global layer.",
    )
)

MLA_DECODE = nu * c_mac * h * (2 * r_kv + d_rope) * layers
register(
    Equation(
        id="mla_decode_attention_flops",
        title="Attention FLOPs per context token: MLA decode",
        lhs=mla_decode_attention_flops,
        rhs=MLA_DECODE,
        chapter=CHAPTER,
        source=Source(
            "deepseek-ai/DeepSeek-V3 inference/model.py (MLA, attn_impl 'absorb')",
            "",
            "scores over the latent and rope key, values from the latent",
        ),
        assumptions=(
            "the key and value up-projections are absorbed into the query and output, so each "
            "head works on the cached latent (r_KV values) and rotary key (d_rope) directly",
        ),
        derivation=Derivation(
            given(
                mla_decode_attention_flops.sym,
                nu * c_mac * h * (r_kv + d_rope) * layers + nu * c_mac * h * r_kv * layers,
                "each head scores a context token's latent and rotary key (nu = 1 vector per "
                "token), then sums the latents",
            ),
            rewrite(mla_decode_attention_flops.sym, MLA_DECODE, "collect"),
        ),
        summary="Every one of the h heads reads the whole latent: about 17 MFLOP per cached "
        "token for DeepSeek-V3, as much as its weights' 2 N_active at a few thousand tokens.",
    )
)

MLA_PREFILL = nu * c_mac * h * (d_nope + d_rope + d_v) * layers
register(
    Equation(
        id="mla_prefill_attention_flops",
        title="Attention FLOPs per context token: MLA prefill",
        lhs=mla_prefill_attention_flops,
        rhs=MLA_PREFILL,
        chapter=CHAPTER,
        source=Source(
            "deepseek-ai/DeepSeek-V3 inference/model.py (MLA, attn_impl 'naive')",
            "",
            "keys and values expanded per head",
        ),
        assumptions=(
            "prefill expands keys and values per head (as prefill kernels do): fewer FLOPs "
            "per pair than the absorbed form, whose 2 r_KV + d_rope is wider than "
            "d_nope + d_rope + d_v",
        ),
        derivation=Derivation(
            given(
                mla_prefill_attention_flops.sym,
                nu * c_mac * h * (d_nope + d_rope) * layers + nu * c_mac * h * d_v * layers,
                "each head scores a key of d_nope + d_rope values and sums values of d_v, one "
                "of each per context token (nu = 1 vector per token)",
            ),
            rewrite(mla_prefill_attention_flops.sym, MLA_PREFILL, "collect"),
        ),
        summary="Multi-head attention with DeepSeek's head widths, per (query, key) pair.",
    )
)

register(
    Equation(
        id="decode_attention_context",
        title="Context at which attention FLOPs equal weight FLOPs (decode)",
        lhs=decode_attention_context,
        rhs=c_f * u * N_a / a_dec,
        chapter=CHAPTER,
        source=Source(LECTURE_A, SECTION_A, "t_compute = B N_active / FLOPs, attention added"),
        assumptions=(
            "below it, attention FLOPs can be dropped from the compute time (at a tenth of it "
            "they add 10%)",
        ),
        derivation=Derivation(
            given(
                a_dec * L,
                c_f * u * N_a,
                "a sequence's new token (u = 1 per step) spends as many attention FLOPs as "
                "weight FLOPs",
            ),
            solve(L, c_f * u * N_a / a_dec, "solve for the context"),
            rename(decode_attention_context.sym, c_f * u * N_a / a_dec, "name it"),
        ),
        summary="About 4.4K tokens for DeepSeek-V3 (MLA reads a wide latent with every head), "
        "tens of thousands for the GQA models: the lecture's 'millions' holds for neither.",
    )
)

PREFILL_PER_TOKEN = c_f * N_a + a_pre * sigma * L / 2
register(
    Equation(
        id="prefill_flops_per_token",
        title="FLOPs per token of a causal prefill",
        lhs=prefill_flops_per_token,
        rhs=PREFILL_PER_TOKEN,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "prefill is compute-bound: 2 N_active per token"),
        assumptions=(
            "causal attention: token i attends to the i tokens before it, so the L tokens make "
            "L (L + 1) / 2 pairs, about L^2 / 2 for L >> 1",
            "a token attends only within its own sequence (sigma = 1 sequence per token)",
        ),
        derivation=Derivation(
            given(
                prefill_flops_per_token.sym,
                prefill_flops.sym / L,
                "a prefill's FLOPs shared by its L tokens",
            ),
            substitute(
                {prefill_flops.sym: L * c_f * N_a + a_pre * sigma * L**2 / 2},
                prefill_flops_per_token.sym,
                (L * c_f * N_a + a_pre * sigma * L**2 / 2) / L,
                "weights: c_fwd N_active per token; attention: a_pre per pair, L^2 / 2 pairs, "
                "each pair inside one sequence (sigma)",
            ),
            rewrite(prefill_flops_per_token.sym, PREFILL_PER_TOKEN, "divide by L"),
        ),
        summary="The lecture's 2 N_active, plus half a context's attention per token: on average "
        "a prompt token attends to half the prompt.",
    )
)

register(
    Equation(
        id="prefill_attention_context",
        title="Prompt length at which attention FLOPs equal weight FLOPs (prefill)",
        lhs=prefill_attention_context,
        rhs=2 * c_f * N_a / (a_pre * sigma),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "prefill is compute-bound: 2 N_active per token"),
        assumptions=("below it, a prefill's attention FLOPs can be dropped (as for decode)",),
        derivation=Derivation(
            given(a_pre * sigma * L / 2, c_f * N_a, "the attention term equals the weights' term"),
            solve(L, 2 * c_f * N_a / (a_pre * sigma), "solve for the prompt length"),
            rename(prefill_attention_context.sym, 2 * c_f * N_a / (a_pre * sigma), "name it"),
        ),
        summary="About 100K tokens for the dense Llama models: long prompts cost up to twice "
        "the lecture's 2 N per token, more beyond.",
    )
)

# -- where the KV cache takes over -------------------------------------------------------------

COMPUTE = B * (c_f * u * N_a + a_dec * L) / (n * F)
KV = B * L * k / (n * W)
s_r, phi = routed_weight_share.sym, expert_read_fraction.sym
WEIGHTS = N_t * (1 - s_r * (1 - phi)) * b / (n * W)
KV_COMPUTE = c_f * u * N_a * W / (F * k - W * a_dec)
register(
    Equation(
        id="kv_compute_crossover_context",
        title="Context at which KV fetch equals compute",
        lhs=kv_compute_context,
        rhs=KV_COMPUTE,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "+50% above 200k tokens => KV fetch = compute"),
        assumptions=(
            "compute and KV reads overlap",
            "attention FLOPs counted: each context token costs a_dec FLOPs and k bytes; when "
            "a_dec / k reaches the chip's FLOPs per byte F / W, KV reads never overtake compute "
            "and the formula turns negative (no crossover)",
        ),
        derivation=Derivation(
            given(KV, COMPUTE, "at the crossover the KV-fetch time equals the compute time"),
            rewrite(
                L * k / W,
                (c_f * u * N_a + a_dec * L) / F,
                "divide both sides by B / n: batch and chips cancel (u = 1 new token per sequence)",
            ),
            solve(L, KV_COMPUTE, "solve for the context length"),
            rename(kv_compute_context.sym, KV_COMPUTE, "name it"),
        ),
        when_negative="no crossover: compute stays ahead of the KV reads at every context "
        "(the attention FLOPs per KV byte, a_dec / k, reach the chip's FLOPs per byte F / W)",
        summary="Beyond this context a token's KV reads take longer than its multiplies and its "
        "attention, whatever the batch. Without attention FLOPs it would be c_fwd N_active W / "
        "(F k); attention pushes it out, far out for MLA, whose FLOPs per KV byte near the "
        "chip's ridge.",
    )
)

KV_WEIGHTS = N_t * (1 - s_r * (1 - phi)) * b / (B * k)
register(
    Equation(
        id="kv_weight_crossover_context",
        title="Context at which KV fetch equals weight fetch",
        lhs=kv_weight_context,
        rhs=KV_WEIGHTS,
        chapter=CHAPTER,
        source=Source(LECTURE_A, SECTION_A, "the balance of the two memory terms"),
        assumptions=(
            "both are read from the same HBM",
            "the weights read are those the batch touches (all of them once the batch far "
            "exceeds the expert-saturation batch)",
        ),
        derivation=Derivation(
            given(KV, WEIGHTS, "at the crossover the batch's KV bytes equal the weights' bytes"),
            rewrite(B * L * k, N_t * (1 - s_r * (1 - phi)) * b, "multiply both sides by n W"),
            solve(L, KV_WEIGHTS, "solve for the context length"),
            rename(kv_weight_context.sym, KV_WEIGHTS, "name it"),
        ),
        summary="The larger the batch, the shorter the context at which KV reads outweigh "
        "weight reads.",
    )
)

L_kink = price_kink_context.sym
register(
    Equation(
        id="kv_bytes_from_price_kink",
        title="KV bytes per token implied by a price kink",
        lhs=implied_kv_bytes_per_token,
        rhs=c_f * u * N_a * W / (F * L_kink),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "bytes_per_token = (mem_bw/FLOPs) N_active / len_ctx"),
        assumptions=(
            "the provider raises prices where KV fetch overtakes compute",
            "the provider's chip ratio and active parameters are as given",
            "attention FLOPs are ignored: right when their FLOPs per KV byte are far below the "
            "chip's ridge (GQA: 2 h / (h_KV b), about 16 FLOP/byte); an MLA model would need a "
            "larger KV per token to kink at the same context",
        ),
        derivation=Derivation(
            given(
                kv_compute_context.sym,
                c_f * u * N_a * W / (F * k),
                "the context at which KV fetch equals compute, attention FLOPs ignored",
            ),
            substitute(
                {kv_compute_context.sym: L_kink},
                L_kink,
                c_f * u * N_a * W / (F * k),
                "suppose the price kink sits at that context",
            ),
            solve(k, c_f * u * N_a * W / (F * L_kink), "solve for the KV bytes per token"),
            rename(implied_kv_bytes_per_token.sym, c_f * u * N_a * W / (F * L_kink), "name it"),
        ),
        summary="Read backwards, the kink's position tells how many KV bytes a token costs.",
    )
)

# -- prices read backwards ---------------------------------------------------------------------

t_in, t_out = prefill_time_per_token.sym, decode_time_per_token.sym
p_in, p_out = input_price.sym, output_price.sym
register(
    Equation(
        id="decode_prefill_ratio_from_prices",
        title="Decode over prefill time implied by prices",
        lhs=decode_prefill_ratio,
        rhs=p_out / p_in,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "output 3-5x input price => decode memory time ~5x"),
        assumptions=(
            "prices are proportional to the chip time a token takes (the same margin on both)",
            "prefill is compute-bound, so an input token costs its compute time",
        ),
        derivation=Derivation(
            given(
                decode_prefill_ratio.sym, t_out / t_in, "chip time per output over per input token"
            ),
            substitute(
                {t_out: p_out * t_in / p_in},
                decode_prefill_ratio.sym,
                p_out / p_in,
                "prices in proportion to chip time: an output token's chip time is an "
                "input token's times the output price over the input price",
            ),
        ),
        summary="If prices track cost, the output/input price ratio is how many times longer a "
        "decoded token holds the chip than a prefilled one: decode's memory-boundness.",
    )
)

register(
    Equation(
        id="cache_discount_from_prices",
        title="Cache-hit discount",
        lhs=cache_discount,
        rhs=p_in / cache_read_price.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "cache hits ~10x cheaper"),
        assumptions=("the uncached input price covers recomputing the prefix",),
        summary="How many times cheaper a cached input token is than recomputing it.",
    )
)

T, T_f, B_f = step_time.sym, fast_step_time.sym, fast_batch_size.sym
m_price, s_speed = fast_price_multiplier.sym, fast_speed_multiplier.sym
register(
    Equation(
        id="fast_mode_batch_ratio",
        title="What fast mode implies about batch size",
        lhs=fast_batch_ratio,
        rhs=1 / (m_price * s_speed),
        chapter=CHAPTER,
        source=Source("Lecture opening (section A)", SECTION_A, "Fast Mode 6x price, 2.5x speed"),
        assumptions=(
            "price is proportional to cost per token, T / B",
            "speed per sequence is one token per step, 1 / T",
        ),
        derivation=Derivation(
            given(m_price, (T_f / B_f) / (T / B), "the price ratio is the cost-per-token ratio"),
            substitute(
                {T_f: T / s_speed},
                m_price,
                B / (s_speed * B_f),
                "fast mode's steps are s times shorter",
            ),
            solve(B_f, B / (m_price * s_speed), "solve for the fast batch"),
            rewrite(B_f / B, 1 / (m_price * s_speed), "divide by the standard batch"),
            rename(fast_batch_ratio.sym, 1 / (m_price * s_speed), "name the ratio"),
        ),
        summary="Paying a multiple of the price for a multiple of the speed buys a batch smaller "
        "by their product.",
    )
)

# -- memory tiers and caching ------------------------------------------------------------------

phi, C_t, W_t = tier_fill_fraction.sym, tier_capacity.sym, tier_bandwidth.sym
t_ret, M_c = tier_retrieval_time.sym, tier_cache_bytes.sym
register(
    Equation(
        id="storage_tier_drain_time",
        title="Hold time of a memory tier (its drain time)",
        lhs=tier_drain_time,
        rhs=C_t / W_t,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "tier with capacity/bandwidth ~ hold time"),
        assumptions=(
            "the rule behind the lecture's drain-time reading: a tier suits a cache when the "
            "time to read its caches back is the hold time times the fraction of the device "
            "they fill",
            "the caches are read back at the device's full bandwidth",
            "the fill fraction cancels, so the hold time is the whole device's drain time "
            "however full the device is",
        ),
        derivation=Derivation(
            given(t_ret, tier_drain_time.sym * phi, "the lecture's rule"),
            substitute(
                {t_ret: M_c / W_t, phi: M_c / C_t},
                M_c / W_t,
                tier_drain_time.sym * M_c / C_t,
                "retrieval reads the caches' bytes at the tier's bandwidth; they fill a "
                "fraction bytes / capacity of the device",
            ),
            solve(tier_drain_time.sym, C_t / W_t, "the caches' bytes cancel"),
        ),
        summary="Capacity over bandwidth: how long a cache on this tier can usefully be held. "
        "The share of the device the caches use cancels out.",
    )
)

register(
    Equation(
        id="cache_hold_cost",
        title="Cost of holding a KV cache",
        lhs=cache_hold_cost,
        rhs=L * k * tier_price.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "hold = bytes / capacity x $/s of that tier"),
        assumptions=("the tier's price is shared by the bytes it holds",),
        derivation=Derivation(
            given(
                cache_hold_cost.sym,
                cache_bytes.sym * tier_price.sym,
                "the bytes held times the price of a byte-hour",
            ),
            substitute(
                {cache_bytes.sym: L * k},
                cache_hold_cost.sym,
                L * k * tier_price.sym,
                "k bytes for each of the L tokens of the prefix",
            ),
        ),
        summary="The cache's bytes times the tier's price per byte-hour.",
    )
)

register(
    Equation(
        id="cache_recompute_cost",
        title="Cost of recomputing a KV cache",
        lhs=cache_recompute_cost,
        rhs=L * prefill_flops_per_token.sym * p / F,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "remat: retrieve = forward compute cost"),
        assumptions=(
            "prefill is compute-bound at the chip's dense peak",
            "causal attention FLOPs counted (they double the cost at the prefill attention "
            "context, about 100K tokens for a dense GQA model)",
        ),
        derivation=Derivation(
            given(
                cache_recompute_cost.sym,
                n * p * (L * prefill_flops_per_token.sym / (n * F)),
                "n chips rented for the compute time of L prefill tokens",
            ),
            rewrite(
                cache_recompute_cost.sym,
                L * prefill_flops_per_token.sym * p / F,
                "the chip count cancels",
            ),
        ),
        summary="A prefill of the whole prefix at the compute-bound cost per token, "
        "attention included.",
    )
)

register(
    Equation(
        id="cache_readback_cost",
        title="Cost of reading a KV cache back from a tier",
        lhs=cache_readback_cost,
        rhs=L * k * p / W_t,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "DDR / flash: retrieve = bytes / tier BW"),
        assumptions=(
            "each chip reads its share of the cache from its own device of the tier",
            "the chips wait for the read: it overlaps no other work",
        ),
        derivation=Derivation(
            given(
                cache_readback_cost.sym,
                n * p * (L * k / (n * W_t)),
                "n chips rented while each reads 1/n of the cache's L k bytes from its device",
            ),
            rewrite(cache_readback_cost.sym, L * k * p / W_t, "the chip count cancels"),
        ),
        summary="The chips' rent for the time the cache takes to stream back: nearly nothing "
        "from HBM, more than a recompute from a spinning disk.",
    )
)

T_EVEN = (cache_recompute_cost.sym - cache_readback_cost.sym) / cache_hold_cost.sym
register(
    Equation(
        id="cache_breakeven_time",
        title="How long holding a cache beats recomputing it",
        lhs=cache_breakeven_time,
        rhs=T_EVEN,
        when_negative="never: reading the cache back from this tier costs more than recomputing it",
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "hold vs retrieve per tier"),
        assumptions=(
            "a time of zero or less means reading the cache back costs more than recomputing "
            "it: holding never pays on that tier",
        ),
        derivation=Derivation(
            given(
                cache_hold_cost.sym * cache_breakeven_time.sym + cache_readback_cost.sym,
                cache_recompute_cost.sym,
                "at the break-even time, holding and one read back have cost as much as one "
                "recompute",
            ),
            solve(cache_breakeven_time.sym, T_EVEN, "solve for the time"),
        ),
        summary="Hold a cache for less than this and holding is cheaper; longer, and "
        "recomputing it is. Where the read back alone costs more than a recompute, never.",
    )
)

# -- KV-cache bytes per sequence and per batch; the cache-write premium ------------------------
from derivations.notation import (  # noqa: E402
    cache_lifetime,
    cache_premium_over_hold,
    cache_write_premium,
    cache_write_price,
    kv_bytes,
)

register(
    Equation(
        id="kv_cache_per_sequence",
        title="KV-cache bytes of one sequence",
        lhs=cache_bytes,
        rhs=L * k,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "bytes_per_token x len_ctx"),
        assumptions=("every token of the context is cached at k bytes (no eviction)",),
        summary="Context length times KV bytes per token: what one conversation holds in memory.",
    )
)

register(
    Equation(
        id="kv_cache_per_batch",
        title="KV-cache bytes of a batch",
        lhs=kv_bytes,
        rhs=B * L * k,
        chapter=CHAPTER,
        source=Source(LECTURE_A, SECTION_A, "the B len_ctx kv_bytes term of t_mem"),
        assumptions=(
            "every sequence of the batch has the same context length",
            "sequences share no cached prefix",
        ),
        derivation=Derivation(
            given(kv_bytes.sym, B * cache_bytes.sym, "B sequences, each with its own cache"),
            substitute(
                {cache_bytes.sym: L * k}, kv_bytes.sym, B * L * k, "each cache is L tokens of k"
            ),
        ),
        summary="Batching shares the weights, not the caches: the batch holds B of them.",
    )
)

p_write, t_life = cache_write_price.sym, cache_lifetime.sym
register(
    Equation(
        id="cache_write_premium",
        title="Cache-write premium",
        lhs=cache_write_premium,
        rhs=p_write - p_in,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "5-min cache write $6.25/M vs input $5/M (1.25x)"),
        assumptions=(
            "writing the cache costs the prefill an uncached input pays anyway, plus holding it",
        ),
        summary="What a provider charges on top of the input price to keep the prompt's cache.",
    )
)

HOLD_PER_TOKEN = k * t_life * tier_price.sym
register(
    Equation(
        id="cache_premium_over_hold",
        title="Cache-write premium over the cost of holding the cache",
        lhs=cache_premium_over_hold,
        rhs=(p_write - p_in) / HOLD_PER_TOKEN,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_F, "hold = bytes / capacity x $/s of that tier"),
        assumptions=(
            "the premium pays for holding the cache for its whole lifetime",
            "the provider's KV bytes per token are the model's, and its tier price is the tier's; "
            "the verdict scales as one over the KV bytes per token, so it turns on a figure the "
            "price list does not give (a Llama-style cache and the cache a price kink implies "
            "differ about two hundredfold)",
        ),
        derivation=Derivation(
            given(
                cache_premium_over_hold.sym,
                cache_write_premium.sym / (cache_hold_cost.sym * t_life / L),
                "premium per token over the holding cost of one token's share of the cache",
            ),
            substitute(
                {cache_hold_cost.sym: L * k * tier_price.sym},
                cache_premium_over_hold.sym,
                cache_write_premium.sym / HOLD_PER_TOKEN,
                "holding costs k bytes per token at the tier's price per byte-hour",
            ),
            substitute(
                {cache_write_premium.sym: p_write - p_in},
                cache_premium_over_hold.sym,
                (p_write - p_in) / HOLD_PER_TOKEN,
                "the premium is the write price over the input price",
            ),
        ),
        summary="Above one, the premium more than pays for holding the cache on that tier for "
        "its lifetime; below one, the tier is too dear for the price.",
    )
)
