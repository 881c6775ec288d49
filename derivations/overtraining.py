"""Chapter E: over-training, RL and the Chinchilla law.

Training compute is 6 N D. If a lab spends about as much on pre-training as on RL and on serving
the model (the sum of two costs whose product is fixed is smallest when they are equal), the
tokens it serves set the tokens it should train on, and that is far beyond the Chinchilla count.

>>> from derivations import get
>>> round(get("balanced_overtraining_factor").evaluate(n_active="100e9 parameter").m)
131
"""

import sympy as sp

from derivations.core import Equation, Source, register
from derivations.derivation import (
    Derivation,
    differentiate,
    given,
    rename,
    rewrite,
    solve,
    stationary,
    substitute,
)
from derivations.notation import (
    backward_flops,
    balanced_cost,
    balanced_overtraining_factor,
    balanced_training_tokens,
    chinchilla_tokens,
    chinchilla_tokens_per_param,
    cost_a,
    cost_product,
    deployment_time,
    fit_token_unit,
    flops_per_param_token,
    forward_flops,
    inference_flops,
    inference_inefficiency,
    inference_rate,
    inference_tokens,
    loss,
    loss_data_coeff,
    loss_data_exponent,
    loss_irreducible,
    loss_param_coeff,
    loss_param_exponent,
    loss_slope,
    n_active,
    optimal_params,
    optimal_tokens,
    overtraining_factor,
    pretrain_inference_token_ratio,
    pretrain_rl_token_ratio,
    rl_flops,
    rl_flops_per_param_token,
    rl_inefficiency,
    rl_tokens,
    total_cost,
    training_flops,
    training_tokens,
)

CHAPTER = "overtraining"
LECTURE = "Lecture section E, RL and over-training"
SECTION_E = "1:18:59-1:33:02"
CHINCHILLA = "Hoffmann et al. 2022 (Chinchilla); facts.md, Scaling laws"

c_f, N, D = flops_per_param_token.sym, n_active.sym, training_tokens.sym
c_rl, eta_rl, D_rl = rl_flops_per_param_token.sym, rl_inefficiency.sym, rl_tokens.sym
eta_inf, D_inf = inference_inefficiency.sym, inference_tokens.sym

register(
    Equation(
        id="training_flops",
        title="Pre-training compute",
        lhs=training_flops,
        rhs=3 * c_f * N * D,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "C_pre = 6 N_active D_pre"),
        assumptions=(
            "attention FLOPs are ignored",
            "the backward pass costs two forward passes: gradients for activations and weights",
            "no recomputation is counted (recomputing activations adds a forward pass: 8 N D)",
        ),
        derivation=Derivation(
            given(
                training_flops.sym,
                forward_flops.sym + backward_flops.sym,
                "each training token runs forward, then backward",
            ),
            substitute(
                {forward_flops.sym: c_f * N * D, backward_flops.sym: 2 * c_f * N * D},
                training_flops.sym,
                c_f * N * D + 2 * c_f * N * D,
                "forward: c_fwd per parameter per token; backward: twice that",
            ),
            rewrite(training_flops.sym, 3 * c_f * N * D, "3 c_fwd = 6 FLOP per parameter-token"),
        ),
        summary="Forward 2 N D, backward 4 N D: the familiar 6 N D.",
    )
)

register(
    Equation(
        id="rl_flops",
        title="RL compute",
        lhs=rl_flops,
        rhs=c_rl * N * D_rl * eta_rl,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "C_RL = (2..6) N_active D_RL x inefficiency"),
        assumptions=(
            "rollouts are mostly forward passes, with some training: 2 to 6 FLOP per "
            "parameter-token",
            "RL runs at a fraction 1/eta of peak (low MFU)",
        ),
        summary="RL tokens cost between inference and training per token, times inefficiency.",
    )
)

register(
    Equation(
        id="inference_flops",
        title="Inference compute",
        lhs=inference_flops,
        rhs=c_f * N * D_inf * eta_inf,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "C_inf = 2 N_active D_inf x inefficiency"),
        assumptions=("serving runs at a fraction 1/eta of peak",),
        summary="A forward pass per served token, times inefficiency.",
    )
)

register(
    Equation(
        id="inference_tokens",
        title="Tokens served over a deployment",
        lhs=inference_tokens,
        rhs=inference_rate.sym * deployment_time.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "50M tok/s x 2 months ~ 2.6e14"),
        assumptions=(
            "a steady rate over the whole deployment",
            "the rate counts every token the model processes, prompt and output alike (each "
            "costs one forward pass)",
        ),
        summary="Rate times time.",
    )
)

a, K, S = cost_a.sym, cost_product.sym, total_cost.sym
register(
    Equation(
        id="equal_cost_optimum",
        title="Two costs with a fixed product: the sum is least when they are equal",
        lhs=balanced_cost,
        rhs=sp.sqrt(K),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "cost A + B minimised near A = B"),
        assumptions=("trading one cost for the other keeps their product fixed (a b = K)",),
        derivation=Derivation(
            given(S, a + K / a, "the sum, with b = K / a"),
            differentiate(a, sp.Derivative(S, a), 1 - K / a**2, "differentiate by a"),
            stationary(1 - K / a**2, "at the minimum the slope is zero"),
            solve(a, sp.sqrt(K), "solve for a: then b = K / a = sqrt(K) = a"),
            rename(balanced_cost.sym, sp.sqrt(K), "name the optimum"),
        ),
        summary="At the optimum a = b = sqrt(K); the second derivative 2K/a^3 is positive, so it "
        "is a minimum. Over-training trades training cost against inference cost this way.",
    )
)

C_pre = 3 * c_f * N * D
register(
    Equation(
        id="pretrain_rl_token_ratio",
        title="Pre-training over RL tokens at equal cost",
        lhs=pretrain_rl_token_ratio,
        rhs=c_rl * eta_rl / (3 * c_f),
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "6 D_pre = 3 D_RL x 3 => D_pre = 1.5 D_RL"),
        assumptions=("pre-training and RL cost the same",),
        derivation=Derivation(
            given(C_pre, c_rl * N * D_rl * eta_rl, "equal costs: C_pre = C_RL"),
            rewrite(D / D_rl, c_rl * eta_rl / (3 * c_f), "divide by 3 c_fwd N D_RL"),
            rename(pretrain_rl_token_ratio.sym, c_rl * eta_rl / (3 * c_f), "name the ratio"),
        ),
        summary="RL's cost per token (with its inefficiency) over training's.",
    )
)

register(
    Equation(
        id="pretrain_inference_token_ratio",
        title="Pre-training over inference tokens at equal cost",
        lhs=pretrain_inference_token_ratio,
        rhs=eta_inf / 3,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "6 D_pre = 2 D_inf x 3 => D_pre = D_inf"),
        assumptions=("pre-training and inference cost the same",),
        derivation=Derivation(
            given(C_pre, c_f * N * D_inf * eta_inf, "equal costs: C_pre = C_inf"),
            rewrite(D / D_inf, eta_inf / 3, "divide by 3 c_fwd N D_inf"),
            rename(pretrain_inference_token_ratio.sym, eta_inf / 3, "name the ratio"),
        ),
        summary="With inference at one third MFU, a token served costs as much as a token trained.",
    )
)

register(
    Equation(
        id="balanced_training_tokens",
        title="Pre-training tokens that cost as much as serving",
        lhs=balanced_training_tokens,
        rhs=pretrain_inference_token_ratio.sym * D_inf,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "D_pre = D_inf ~ 200T"),
        assumptions=("pre-training and inference cost the same",),
        derivation=Derivation(
            given(
                pretrain_inference_token_ratio.sym,
                balanced_training_tokens.sym / D_inf,
                "the equal-cost ratio of pre-training to inference tokens",
            ),
            solve(
                balanced_training_tokens.sym,
                pretrain_inference_token_ratio.sym * D_inf,
                "times the tokens the deployment serves",
            ),
        ),
        summary="The equal-cost ratio applied to the tokens a deployment serves.",
    )
)

register(
    Equation(
        id="chinchilla_tokens",
        title="Chinchilla-optimal training tokens",
        lhs=chinchilla_tokens,
        rhs=chinchilla_tokens_per_param.sym * N,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "Chinchilla D = 20 N"),
        assumptions=("the Chinchilla rule of thumb, applied to active parameters",),
        summary="About 20 tokens per parameter minimise loss for a compute budget.",
    )
)

register(
    Equation(
        id="overtraining_factor",
        title="Over-training factor",
        lhs=overtraining_factor,
        rhs=D / chinchilla_tokens.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "200T / 2T = 100x over-trained"),
        assumptions=(
            "the Chinchilla count of the same parameters the tokens trained: for an MoE the "
            "active ones, a proxy (its loss also falls with its idle experts, so per active "
            "parameter the factor overstates over-training and per total parameter understates it)",
        ),
        summary="Training tokens over the Chinchilla count.",
    )
)

register(
    Equation(
        id="balanced_overtraining_factor",
        title="Over-training factor at equal training and serving cost",
        lhs=balanced_overtraining_factor,
        rhs=balanced_training_tokens.sym / chinchilla_tokens.sym,
        chapter=CHAPTER,
        source=Source(LECTURE, SECTION_E, "models may be 100x over-trained"),
        assumptions=("pre-training and inference cost the same",),
        summary="The lecture's chain in one line: tokens served, equal cost, Chinchilla count.",
    )
)

E_, A, Bc = loss_irreducible.sym, loss_param_coeff.sym, loss_data_coeff.sym
alpha, beta = loss_param_exponent.sym, loss_data_exponent.sym
D0 = fit_token_unit.sym
register(
    Equation(
        id="chinchilla_loss",
        title="The Chinchilla loss law",
        lhs=loss,
        rhs=E_ + A / N**alpha + Bc / (D / D0) ** beta,
        # the floor, then the parameter term, then the data term, as the papers write it
        written=sp.Add(E_, A / N**alpha, Bc / D**beta, evaluate=False),
        chapter=CHAPTER,
        source=Source(CHINCHILLA),
        assumptions=(
            "a dense model: N counts every parameter, all active; applied to an MoE's active "
            "parameters only as a proxy",
        ),
        summary="Irreducible loss plus a parameter term and a data term, each a power law.",
    )
)

C = training_flops.sym
G = (alpha * A / (beta * Bc)) ** (1 / (alpha + beta))
N_STAR = G * (C / (3 * c_f * D0)) ** (beta / (alpha + beta))
D_OF_N = C / (3 * c_f * N)
LOSS_ON_BUDGET = E_ + A / N**alpha + Bc / (D_OF_N / D0) ** beta
SLOPE = (
    -alpha * A / N ** (alpha + 1) + beta * Bc * (3 * c_f * D0) ** beta * N ** (beta - 1) / C**beta
)
register(
    Equation(
        id="compute_optimal_params",
        title="Compute-optimal parameters",
        lhs=optimal_params,
        rhs=N_STAR,
        chapter=CHAPTER,
        source=Source(CHINCHILLA),
        assumptions=("training compute is 6 N D", "the loss law holds at this scale"),
        derivation=Derivation(
            given(loss.sym, E_ + A / N**alpha + Bc / (D / D0) ** beta, "the loss law"),
            substitute(
                {D: D_OF_N},
                loss.sym,
                LOSS_ON_BUDGET,
                "spend the budget: D = C / (6 N)",
            ),
            differentiate(N, loss_slope.sym, SLOPE, "differentiate along the budget"),
            stationary(SLOPE, "at the optimum the slope is zero"),
            solve(N, N_STAR, "solve for N"),
            rename(optimal_params.sym, N_STAR, "name it N*"),
        ),
        summary="N* grows as C to the beta / (alpha + beta).",
    )
)

register(
    Equation(
        id="compute_optimal_tokens",
        title="Compute-optimal training tokens",
        lhs=optimal_tokens,
        rhs=C / (3 * c_f * optimal_params.sym),
        chapter=CHAPTER,
        source=Source(CHINCHILLA),
        assumptions=("training compute is 6 N D",),
        derivation=Derivation(
            given(C, 3 * c_f * N * D, "the budget is spent: C = 6 N D"),
            solve(D, C / (3 * c_f * N), "solve for the tokens"),
            substitute(
                {N: optimal_params.sym},
                D,
                C / (3 * c_f * optimal_params.sym),
                "at the compute-optimal size",
            ),
            rename(optimal_tokens.sym, C / (3 * c_f * optimal_params.sym), "name it D*"),
        ),
        summary="What the budget buys in tokens at the optimal size: D* grows as C to the "
        "alpha / (alpha + beta).",
    )
)

# -- training wall-clock time and MFU ----------------------------------------------------------
from derivations.notation import flops, mfu, training_chip_hours, training_chips, training_time  # noqa: E402

F, n_train, u, H = flops.sym, training_chips.sym, mfu.sym, training_chip_hours.sym
C_pre = training_flops.sym
register(
    Equation(
        id="training_time",
        title="Wall-clock time of pre-training",
        lhs=training_time,
        rhs=C_pre / (n_train * F * u),
        chapter=CHAPTER,
        source=Source("Kaplan et al. 2020 (C = 6 N D); MFU as in Chowdhery et al. 2022 (PaLM)"),
        assumptions=(
            "the chips deliver a fraction MFU of their dense peak at the chosen precision to "
            "the model's 6 N D FLOPs, for the whole run",
            "restarts and evaluation are inside that fraction",
        ),
        derivation=Derivation(
            given(u, C_pre / (training_time.sym * n_train * F), "MFU: useful FLOPs over peak"),
            solve(training_time.sym, C_pre / (n_train * F * u), "solve for the time"),
        ),
        summary="The compute over what the chips actually deliver: peak times MFU times chips.",
    )
)

register(
    Equation(
        id="training_mfu",
        title="MFU from reported chip-hours",
        lhs=mfu,
        rhs=C_pre / (H * F),
        chapter=CHAPTER,
        source=Source("DeepSeek-V3 README (2.664M H800 GPU-hours of pre-training)"),
        assumptions=(
            "the reported chip-hours cover exactly the 6 N D FLOPs of pre-training",
            "attention FLOPs are not counted as useful; they are not always small (for an MLA "
            "model at a few thousand tokens of context they add over a tenth to 6 N D)",
        ),
        derivation=Derivation(
            given(u, C_pre / (training_time.sym * n_train * F), "MFU: useful FLOPs over peak"),
            substitute(
                {training_time.sym: H / n_train},
                u,
                C_pre / (H * F),
                "chip-hours are chips times wall-clock hours",
            ),
        ),
        summary="Read backwards, a lab's reported chip-hours and token count give its MFU.",
    )
)
