"""The validation chapter: serving and training bounds that a published measurement is held against.

The lecture's roofline gives a lower bound on the time of a decode step, so an upper bound on the
tokens a chip can produce. These equations turn it into the figures benchmarks publish: output
tokens per second per chip, tokens per second per user, time per output token (TPOT) and time to
first token (TTFT), and for training the tokens per second per chip at full utilisation (6ND).
They are written on chapter A's symbols (``compute_time``, ``memory_time``, ``step_time``) and
the pre-training compute (``training_flops``), so improvements to those equations (attention
FLOPs, MoE expert reads, separate weight and KV precisions) flow into every bound here.

>>> from derivations import get
>>> rate = get("decode_rate_per_chip").evaluate(
...     hardware="h200", model="llama_2_70b", precision="fp8",
...     batch_size=64, context_length="1000 token/sequence", n_chips=1)
>>> round(rate.m)
3866
"""

import sympy as sp

from derivations.core import Equation, Source, register, symbol
from derivations.core import get as derivations_get
from derivations.derivation import Derivation, given, rewrite, substitute
from derivations.notation import (
    batch_size,
    compute_time,
    context_length,
    decode_tokens_per_sequence,
    flops,
    flops_per_param_token,
    head_dim,
    memory_time,
    n_active,
    n_chips,
    n_heads,
    n_layers,
    prefill_attention_flops,
    prefill_flops_per_token,
    sequences_per_token,
    step_time,
    training_flops,
    training_tokens,
    vectors_per_token,
    weight_fetch_time,
)

CHAPTER = "validation"
LECTURE = "Lecture section A, batch size, cost and latency"
SECTION_A = "00:00-32:09"
SECTION_E = "1:18:59-1:33:02"

# -- symbols of this chapter --------------------------------------------------------------------
input_output_ratio = symbol(
    "input_output_ratio",
    "dimensionless",
    "prompt tokens per generated token of a request (mean input over mean output length)",
    r"\rho",
)
input_tokens = symbol("input_tokens", "token", "prompt tokens of one request", r"L_{\mathrm{in}}")
decode_rate_per_chip = symbol(
    "decode_rate_per_chip",
    "token/s/chip",
    "decode tokens per second per chip (upper bound)",
    r"R_{\mathrm{chip}}",
)
decode_rate_per_user = symbol(
    "decode_rate_per_user",
    "token/s/sequence",
    "decode tokens per second seen by one sequence (upper bound)",
    r"R_{\mathrm{user}}",
)
serving_step_time = symbol(
    "serving_step_time",
    "s",
    "time per output token with each request's prefill sharing the steps (TPOT lower bound)",
    r"T_{\mathrm{serve}}",
    display="ms",
)
serving_rate_per_chip = symbol(
    "serving_rate_per_chip",
    "token/s/chip",
    "output tokens per second per chip, prefill included (upper bound)",
    r"R^{\mathrm{serve}}_{\mathrm{chip}}",
)
serving_rate_per_user = symbol(
    "serving_rate_per_user",
    "token/s/sequence",
    "output tokens per second seen by one sequence, prefill included (upper bound)",
    r"R^{\mathrm{serve}}_{\mathrm{user}}",
)
ttft_bound = symbol(
    "ttft_bound",
    "s",
    "time to first token: prefill of one prompt (lower bound)",
    r"T_{\mathrm{TTFT}}",
    display="ms",
)
measured_rate = symbol(
    "measured_rate",
    "token/s/chip",
    "a measured output rate per chip",
    r"R_{\mathrm{meas}}",
)
serving_efficiency = symbol(
    "serving_efficiency",
    "dimensionless",
    "measured rate over the bound's rate",
    r"\eta",
)
training_rate_bound = symbol(
    "training_rate_bound",
    "token/s/chip",
    "training tokens per second per chip at the chip's peak FLOP/s (6ND count)",
    r"R_{\mathrm{train}}",
)
model_flops_utilization = symbol(
    "model_flops_utilization",
    "dimensionless",
    "model FLOPs utilisation: measured training rate over the 6ND bound",
    r"\operatorname{MFU}_{\mathrm{meas}}",
)

training_sequence = symbol(
    "training_sequence",
    "token",
    "tokens per training sequence (the attention span of every token)",
    r"L_{\mathrm{train}}",
)
attention_training_rate_bound = symbol(
    "attention_training_rate_bound",
    "token/s/chip",
    "training tokens per second per chip at peak FLOP/s, attention FLOPs counted",
    r"R^{\mathrm{attn}}_{\mathrm{train}}",
)

u, nu = decode_tokens_per_sequence.sym, vectors_per_token.sym
B, n, T, rho = batch_size.sym, n_chips.sym, step_time.sym, input_output_ratio.sym
c_f, N_a, F = flops_per_param_token.sym, n_active.sym, flops.sym
T_s, L_in = serving_step_time.sym, input_tokens.sym
D, C_pre = training_tokens.sym, training_flops.sym

register(
    Equation(
        id="decode_rate_per_chip",
        title="Decode tokens per second per chip",
        lhs=decode_rate_per_chip,
        rhs=u * B / (n * T),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "throughput = B / step, shared by the replica's chips"),
        assumptions=(
            "each of the B sequences gets one token per step",
            "the replica's n chips share the step; no chip serves two replicas",
        ),
        derivation=Derivation(
            given(
                decode_rate_per_chip.sym,
                u * B / T / n,
                "a replica's u B / T tokens per second over n chips (u = 1 token per sequence)",
            ),
            rewrite(decode_rate_per_chip.sym, u * B / (n * T), "one fraction"),
        ),
        summary="The replica's tokens per step over its step time, per chip: what a benchmark's "
        "'tokens/s per GPU' is held against.",
    )
)

register(
    Equation(
        id="decode_rate_per_user",
        title="Decode tokens per second per user",
        lhs=decode_rate_per_user,
        rhs=u / T,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "each sequence gets one token per step"),
        assumptions=("one token per sequence per step (no speculative decoding)",),
        summary="A sequence advances one token per step, so its speed is the step rate.",
    )
)

prompt_length = symbol(
    "prompt_length",
    "token/sequence",
    "prompt tokens per sequence (a request's input length, as context)",
    r"L_{\mathrm{p}}",
)
L_ctx, L_p = context_length.sym, prompt_length.sym
a_pre, sigma = prefill_attention_flops.sym, sequences_per_token.sym
PHI = prefill_flops_per_token.sym
# the prompt in terms of the mean context over a generation, L = L_p + L_out / 2 = L_p (1 + 1/2rho)
PROMPT = 2 * rho * L_ctx / (1 + 2 * rho)
PREFILL_SHARE = rho * u * B * (c_f * N_a + a_pre * sigma * PROMPT / 2) / (n * F)
SERVE = sp.Max(compute_time.sym + PREFILL_SHARE, memory_time.sym)
register(
    Equation(
        id="serving_step_time",
        title="Time per output token with prefill sharing the chips",
        lhs=serving_step_time,
        rhs=SERVE,
        chapter=CHAPTER,
        source=Source(
            LECTURE,
            SECTION_A,
            "T >= max(t_compute, t_mem), with each request's prompt FLOPs added to the compute",
        ),
        assumptions=(
            "every prompt token costs a causal prefill's FLOPs per token (at the prompt's "
            "length: 2 N_active plus attention to half the prompt on average), "
            "spread over that request's output tokens",
            "the context is the mean over a generation, L_ctx = L_p + L_out / 2, so the prompt "
            "is L_p = 2 rho L_ctx / (1 + 2 rho)",
            "prefill reads no extra weights: its chunks ride the decode steps' weight reads",
            "compute and memory traffic overlap perfectly, as in the decode step time",
        ),
        derivation=Derivation(
            given(
                T_s,
                sp.Max(compute_time.sym + rho * u * B * PHI / (n * F), memory_time.sym),
                "per generated token the step also does rho prompt tokens' prefill, Phi_pre "
                "FLOPs each",
            ),
            substitute(
                {PHI: c_f * N_a + a_pre * sigma * L_p / 2},
                T_s,
                sp.Max(
                    compute_time.sym
                    + rho * u * B * (c_f * N_a + a_pre * sigma * L_p / 2) / (n * F),
                    memory_time.sym,
                ),
                "the causal prefill's FLOPs per token at the prompt's length",
            ),
            substitute(
                {L_p: PROMPT},
                T_s,
                SERVE,
                "the mean context over a generation is the prompt plus half the output, and "
                "the output is the prompt over rho: solved for the prompt",
            ),
        ),
        # shown with the prompt itself: attention to half the prompt, a_pre L_in / 2 per prompt
        # token, where the algebra carries the prompt as a share of the mean context
        display=(
            (
                a_pre * sigma * PROMPT / 2,
                a_pre * L_in / 2,
                ((L_ctx, L_in * (1 + 2 * rho) / (2 * rho * sigma)),),
            ),
        ),
        summary="A mix of prompts and generation adds to the compute side of the roofline the "
        "prefill of the prompt tokens that come with each generated token (ρ = L_in / L_out of "
        "them), each at the causal prefill's cost: its weights' 2 N_active and attention to half "
        "the prompt, a_pre L_in / 2 with a_pre the attention FLOPs per query-key pair. It adds "
        "nothing to the memory side. With no prompts it is the decode step time: the lower "
        "bound on a decode step, hence on the time per output token (TPOT).",
    )
)

register(
    Equation(
        id="serving_rate_per_chip",
        title="Output tokens per second per chip, prefill included",
        lhs=serving_rate_per_chip,
        rhs=u * B / (n * T_s),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "throughput = B / step, shared by the replica's chips"),
        assumptions=("each of the B sequences gets one output token per serving step",),
        derivation=Derivation(
            given(
                serving_rate_per_chip.sym,
                u * B / T_s / n,
                "u B tokens per serving step (u = 1 per sequence), over n chips",
            ),
            rewrite(serving_rate_per_chip.sym, u * B / (n * T_s), "one fraction"),
        ),
        summary="The bound a measured 'output tokens/s per GPU' is held against.",
    )
)

register(
    Equation(
        id="serving_rate_per_user",
        title="Output tokens per second per user, prefill included",
        lhs=serving_rate_per_user,
        rhs=u / T_s,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_A, "each sequence gets one token per step"),
        assumptions=("one token per sequence per step (no speculative decoding)",),
        summary="The inverse of the TPOT bound: no sequence can be served faster than this.",
    )
)

PREFILL_COMPUTE = c_f * N_a * L_in / (n * F)
register(
    Equation(
        id="ttft_bound",
        title="Time to first token (prefill of one prompt)",
        lhs=ttft_bound,
        rhs=sp.Max(PREFILL_COMPUTE, weight_fetch_time.sym),
        chapter=CHAPTER,
        source=Source(
            LECTURE, SECTION_A, "prefill: t_compute with the prompt's tokens as the batch"
        ),
        assumptions=(
            "the prompt is processed alone on the replica's n chips, at peak FLOP/s",
            "the prompt's attention FLOPs are left out: below the prefill attention context "
            "(about 100K tokens for the dense Llama models) they add less than L_in over it",
            "the weights are read at least once; an MoE's weight read counts the experts the "
            "prompt's L_in tokens touch (the weight fetch at a batch of L_in)",
        ),
        derivation=Derivation(
            given(
                ttft_bound.sym,
                sp.Max(compute_time.sym, weight_fetch_time.sym),
                "a prefill is one step whose batch is the prompt's tokens",
            ),
            substitute(
                {compute_time.sym: PREFILL_COMPUTE},
                ttft_bound.sym,
                sp.Max(PREFILL_COMPUTE, weight_fetch_time.sym),
                "its compute: c_fwd FLOPs per active parameter for each of the L_in prompt tokens",
            ),
        ),
        summary="A prompt of L_in tokens needs c_fwd N_active L_in FLOPs and one read of the "
        "weights; the slower of the two bounds the time to first token.",
    )
)

register(
    Equation(
        id="serving_efficiency",
        title="Efficiency of a serving system",
        lhs=serving_efficiency,
        rhs=measured_rate.sym / serving_rate_per_chip.sym,
        chapter=CHAPTER,
        source=Source("This chapter", "", "efficiency = measured / bound"),
        assumptions=("the bound is evaluated at the measurement's own chips, model and workload",),
        summary="Above 1 the measurement beats the bound: the model left something out.",
    )
)

TRAIN_FLOPS = derivations_get("training_flops").rhs  # C_pre = 3 c_fwd N_active D
register(
    Equation(
        id="training_rate_bound",
        title="Training tokens per second per chip at peak FLOP/s",
        lhs=training_rate_bound,
        rhs=sp.cancel(F * D / TRAIN_FLOPS),
        chapter=CHAPTER,
        source=Source("Lecture section E, RL and over-training", SECTION_E, "C_pre = 6 N D"),
        assumptions=(
            "the pre-training compute 6ND (6 N_active per token; the attention-aware bound "
            "counts attention too)",
            "the chip runs at its dense peak FLOP/s at the training precision",
        ),
        derivation=Derivation(
            given(
                training_rate_bound.sym,
                D / (C_pre / F),
                "D tokens over the time one chip needs for their C_pre FLOPs",
            ),
            substitute(
                {C_pre: TRAIN_FLOPS},
                training_rate_bound.sym,
                F * D / TRAIN_FLOPS,
                "the pre-training compute 6ND",
            ),
            rewrite(
                training_rate_bound.sym,
                sp.cancel(F * D / TRAIN_FLOPS),
                "the token count cancels: the rate does not depend on how long training runs",
            ),
        ),
        summary="A chip that did nothing but the model's FLOPs would train this many tokens per "
        "second; the measured rate over it is the MFU. Its FLOPs per token are the pre-training "
        "equation's 6N, read from it when this module loads.",
    )
)

ATTN = 2 * nu * n_layers.sym * n_heads.sym * head_dim.sym * training_sequence.sym
register(
    Equation(
        id="attention_training_rate_bound",
        title="Training tokens per second per chip, attention FLOPs counted",
        lhs=attention_training_rate_bound,
        rhs=F / (3 * c_f * (N_a + ATTN)),
        chapter=CHAPTER,
        source=Source(
            "Chowdhery et al. 2022 (PaLM), appendix B",
            "",
            "6N + 12 L H Q T FLOPs per token",
        ),
        assumptions=(
            "each token's query meets all L_train keys and values of its sequence in every layer, "
            "one vector each per token "
            "(no causal halving, as PaLM counts it)",
            "the attention matrix products cost, like weights, a forward multiply-add and a "
            "backward pass of twice that",
            "the chip runs at its dense peak FLOP/s at the training precision",
        ),
        derivation=Derivation(
            given(
                attention_training_rate_bound.sym,
                F / (3 * c_f * N_a + 3 * c_f * ATTN),
                "peak FLOP/s over FLOPs per token: 6N for the weights, and for attention "
                "Q K^T and A V, each h d_h L_train multiply-adds per layer, forward and backward",
            ),
            rewrite(
                attention_training_rate_bound.sym,
                F / (3 * c_f * (N_a + ATTN)),
                "the attention term counts like 2 n_layers h d_h L_train extra parameters",
            ),
        ),
        summary="Attention adds 2 n_layers h d_h L_train 'parameters' per token: at long "
        "sequences a publisher that counts it reports a higher MFU for the same tokens per second.",
    )
)

register(
    Equation(
        id="model_flops_utilization",
        title="Model FLOPs utilisation (MFU)",
        lhs=model_flops_utilization,
        rhs=measured_rate.sym / training_rate_bound.sym,
        chapter=CHAPTER,
        source=Source("This chapter", "", "MFU = measured tokens/s x 6N / peak FLOP/s"),
        assumptions=("the model's FLOPs are counted as 6 N_active per token (no attention)",),
        derivation=Derivation(
            given(
                model_flops_utilization.sym,
                measured_rate.sym * (C_pre / D) / F,
                "FLOPs done per second (tokens/s times FLOPs per token) over peak FLOP/s",
            ),
            substitute(
                {C_pre: D * F / training_rate_bound.sym},
                model_flops_utilization.sym,
                measured_rate.sym / training_rate_bound.sym,
                "the FLOPs of D tokens are D times the peak FLOP/s over the bound's rate",
            ),
        ),
        summary="The fraction of peak FLOP/s that went into the model's 6ND FLOPs.",
    )
)
