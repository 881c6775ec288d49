"""Chapter E's context: the lecture's chain from tokens served to over-training, and Chinchilla.

>>> from units.presets import load
>>> context(load())["pre_rl"]
'1.5'
"""

import numpy as np
import sympy as sp

from book.context import Evaluator, header
from book.format import chip_name, quantity, said, said_number, spoken_number
from derivations import get
from derivations.core import readable, to_display_latex
from derivations.notation import flops_per_param_token
from units import Q_
from units.presets import Presets

BUDGETS = ("1e22 FLOP", "1e23 FLOP", "1e24 FLOP", "1e25 FLOP", "1e26 FLOP")
TRAINED = ("kimi_k2",)


def context(presets: Presets) -> dict:
    frontier = presets.parameter["frontier_active_params"].value
    ev = Evaluator(presets, n_active=frontier)
    plain = Evaluator(presets)
    chinchilla = presets.parameter["chinchilla_model_params"].value
    return {
        "chinchilla_params": said(chinchilla.to("Gparameter")),
        "chinchilla_trained": quantity(
            presets.parameter["chinchilla_model_tokens"].value.to("Ttoken")
        ),
        "frontier": said(frontier.to("Gparameter")),
        "rate": quantity(presets.parameter["inference_rate"].value.to("Mtoken/s")),
        "deployment": quantity(presets.parameter["deployment_time"].value),
        "inference_tokens": plain.text("inference_tokens"),
        "pre_rl": plain.text("pretrain_rl_token_ratio"),
        "pre_inf": plain.text("pretrain_inference_token_ratio"),
        "balanced_tokens": plain.text("balanced_training_tokens"),
        "chinchilla_tokens": ev.text("chinchilla_tokens"),
        "overtraining": ev.text("balanced_overtraining_factor"),
        "training_flops": ev.text(
            "training_flops", training_tokens=plain.q("balanced_training_tokens")
        ),
        "rl_inefficiency": quantity(presets.parameter["rl_inefficiency"].value),
        "inference_inefficiency": quantity(presets.parameter["inference_inefficiency"].value),
        "trained": [_trained(presets, m) for m in TRAINED],
        "fits": [_fit(presets, f.id) for f in presets.fit.values()],
        "budgets": _budget_table(presets),
        **_training_time(presets),
        **_chain(presets),
        "utilisation": _utilisation(presets),
        "derated": _derated(presets),
        "splits": _splits(presets),
        "counted": {eq: _counted(eq) for eq in COUNTED},
        "arch": _architecture_first(presets),
        "steeper": _steeper_slope(presets),
    }


STEEPER_SLOPE = 3  # the exercise's case: halving the model needs 2**3, eight times the tokens


def _steeper_slope(presets: Presets) -> dict:
    """The exercise that carries the fixed product to any iso-loss slope e (D as N^-e, tokens
    served and RL's fixed): pre-training's chip-time goes as N^(1-e), the rest as N, so the
    cheapest model spends 1/(e-1) of the rest on pre-training. Worked at e = 3, at each fit's
    local slope at the equal-cost model, and at its slope at the numeric optimum, which returns
    that optimum's share."""
    par = {k: v.value for k, v in presets.parameter.items()}
    frontier = par["frontier_active_params"]
    plain = Evaluator(presets)
    d_inf = plain.q("inference_tokens")
    d_pre = plain.q("balanced_training_tokens")
    d_rl = d_pre / plain.q("pretrain_rl_token_ratio")

    thirds = 1 / (BILLS - 1)  # the equal thirds: pre-training over serving and RL together

    def share(slope):
        return said_number(1 / (slope - 1), 2)

    fits = []
    for f in presets.fit.values():
        _, size, tokens, _, _ = cheapest_at_loss(presets, f.id, frontier, d_pre, d_inf, d_rl)
        at_optimum = iso_loss_slope(presets, f.id, Q_(size, "parameter"), Q_(tokens, "token"))
        local = iso_loss_slope(presets, f.id, frontier, d_pre)
        fits.append(
            {
                "short": f"{f.id.split('_')[0].capitalize()} fit",
                "slope": said_number(local, 2),
                "share": share(local),
                "share_value": 1 / (local - 1),
                "above_thirds": 1 / (local - 1) > thirds,
                "slope_opt": said_number(at_optimum, 2),
                "share_opt_value": 1 / (at_optimum - 1),
            }
        )
    return {
        "one": said_number(1),  # the unit in 1/(e - 1) and N^(1-e)
        "slope": said_number(STEEPER_SLOPE),
        "tokens": said_number(2**STEEPER_SLOPE),
        "share": share(STEEPER_SLOPE),
        "fixed_share": share(FIXED_PRODUCT_SLOPE),
        "fits": fits,
    }


ARCH_MODEL = "llama_3_1_70b"  # a dense model: its config fixes N, and the rule its tokens


def _architecture_first(presets: Presets) -> dict:
    """The exercise that starts from a config: count the parameters, take the Chinchilla tokens
    for them, then 6ND, then days on DeepSeek-V3's cluster at its measured MFU; and the same for
    the tokens the model was actually trained on."""
    mdl = presets.get("model", ARCH_MODEL)
    ev = Evaluator(presets, model=ARCH_MODEL)
    n = ev.q("params_active").to("Gparameter")
    d = Evaluator(presets, n_active=n).q("chinchilla_tokens")
    actual = presets.parameter["llama_3_1_training_tokens"].value
    hours = presets.parameter["deepseek_v3_chip_hours"].value
    chips = presets.parameter["deepseek_v3_training_chips"].value
    mfu = Evaluator(presets, TIMED_CHIP, TIMED_MODEL, "fp8").q(
        "training_mfu", training_chip_hours=hours
    )
    run = Evaluator(presets, TIMED_CHIP, ARCH_MODEL, "fp8", n_active=n)

    def days(tokens):
        flops = run.q("training_flops", training_tokens=tokens)
        time = run.q("training_time", training_flops=flops, training_chips=chips, mfu=mfu)
        return said(time.to("day"))

    gated = 3  # a gated MLP's three matrices of d by d_ff: gate, up and down
    return {
        "name": mdl.name,
        "layers": said_number(mdl.layers),
        "d_model": said_number(mdl.d_model),
        "heads": said_number(mdl.n_heads),
        "kv_heads": said_number(mdl.n_kv_heads),
        "head_dim": said_number(mdl.head_dim),
        "d_ff": said_number(mdl.d_ff),
        "vocab": said_number(mdl.vocab),
        "attention": said(ev.q("gqa_attention_params"), 3),
        "mlp": said(Q_(gated * mdl.d_model * mdl.d_ff, "parameter"), 3),
        "embeddings": said(Q_(2 * mdl.vocab * mdl.d_model, "parameter").to("Gparameter"), 3),
        "params": said(n, 3),
        "tokens": said(d),
        "flops": said(run.q("training_flops", training_tokens=d)),
        "days": days(d),
        "actual": said(actual),
        "factor": said((actual / d).to("")),
        "actual_days": days(actual),
    }


# the equations the reading flow shows as the prose counts them: 6ND, not 3 c_fwd N D
COUNTED = (
    "training_flops",
    "inference_flops",
    "pretrain_rl_token_ratio",
    "compute_optimal_params",
    "compute_optimal_tokens",
)


def _counted(eq_id: str) -> dict:
    """``eq_id``'s display with c_fwd written as its value, 2 (FLOP per parameter per token), as
    the prose counts: the equation's own display form with that one substitution, so it stays
    equal to the algebra (the reference cards keep the symbol).

    >>> print(_counted("training_flops")["display"])
    C_{\\mathrm{pre}} = 6 N_{\\mathrm{active}} D_{\\mathrm{pre}}
    """
    eq = get(eq_id)
    c_f = flops_per_param_token
    rhs = readable(eq.display_expr.xreplace({c_f.sym: sp.nsimplify(c_f.value.m)}))
    lhs = eq.display_latex().partition(" = ")[0]
    return {"display": f"{lhs} = {to_display_latex(rhs)}"}


def _derated(presets: Presets) -> dict:
    """Served tokens derated for the chance a model is obsolete or thrown away before it serves:
    the expected tokens served, and the equal-cost over-training factor they imply (both scale
    with the derating)."""
    frontier = presets.parameter["frontier_active_params"].value
    q = presets.parameter["inference_derating"].value.to("")
    rate = presets.parameter["inference_rate"].value
    ev = Evaluator(presets, n_active=frontier, inference_rate=q * rate)
    return {
        "share": said_number(100 * q.m, 2) + "%",
        "tokens": Evaluator(presets, inference_rate=q * rate).text("inference_tokens"),
        "factor": ev.text("balanced_overtraining_factor"),
    }


BILLS = 3  # pre-training, RL and inference: the lecture's three equal shares
# the iso-loss slope -d ln D / d ln N that keeps pre-training (N D) times serving (N) fixed:
# N^2 D constant, so D goes as N^-2
FIXED_PRODUCT_SLOPE = 2


def _splits(presets: Presets) -> dict:
    """The lecture's split in thirds against the naive half to serving and a quarter each to
    pre-training and RL. Served tokens are set by demand, so the split moves the pre-training
    tokens, and the over-training factor with them, in proportion to pre-training's compute over
    serving's: 1 in thirds, a half in the other split."""
    thirds = (1 / BILLS) / (1 / BILLS)  # pre-training over serving compute
    halves = ((1 / 2) * (1 / 2)) / (1 / 2)  # a quarter against a half
    frontier = presets.parameter["frontier_active_params"].value
    plain = Evaluator(presets)
    ev = Evaluator(presets, n_active=frontier)
    tokens = halves / thirds * plain.q("balanced_training_tokens")
    return {
        "cost_ratio": said_number(halves),
        "tokens": said(tokens),
        "factor": ev.text("overtraining_factor", training_tokens=tokens),
        "change": said_number(thirds / halves),
    }


def rough(q, digits: int = 1) -> str:
    """A rule of thumb's bold round figure: ``q`` to one significant figure (``'100'``)."""
    return said(q, digits)


def _chain(presets: Presets) -> dict:
    """The lecture's chain worked on its frontier model, and where the presets differ from it:
    costs at equal spend, the rumoured token count, the distance to each fit's compute-optimal
    line, and the true cost optimum at the equal-cost model's loss under each fit."""
    par = {k: v.value for k, v in presets.parameter.items()}
    frontier = par["frontier_active_params"]
    plain = Evaluator(presets)
    ev = Evaluator(presets, n_active=frontier)
    d_inf = plain.q("inference_tokens")
    d_pre = plain.q("balanced_training_tokens")
    d_rl = d_pre / plain.q("pretrain_rl_token_ratio")
    c_pre = ev.q("training_flops", training_tokens=d_pre)
    c_rl = ev.q("rl_flops", rl_tokens=d_rl)
    c_inf = ev.q("inference_flops", inference_tokens=d_inf)
    rumour = par["rumoured_pretrain_tokens"]
    c_rumour = ev.q("training_flops", training_tokens=rumour)
    per_param = par["chinchilla_tokens_per_param"]
    c_f = flops_per_param_token.value  # the forward pass's multiply-add per parameter-token
    global_tokens = plain.q("inference_tokens", inference_rate=par["global_inference_rate"])
    overtraining = ev.q("balanced_overtraining_factor")
    rule = (c_pre / (c_inf + c_rl)).to("").m  # the equal thirds' pre-training over the rest
    fits = [
        _fit_against_chain(presets, f.id, frontier, d_pre, d_inf, d_rl)
        for f in presets.fit.values()
    ]
    # the equal-cost rule on the chapter's reference product of costs, and a lopsided split
    product = Q_(1e50, "FLOP**2")  # the chapter's reference case (book/cases.py)
    even = plain.q("equal_cost_optimum", cost_product=product).to("FLOP")
    lopsided = 2 * even  # spend twice the balanced amount on one side
    # DeepSeek-V3's cluster at its own BF16 MFU, on the frontier model's equal-cost tokens
    hours = par["deepseek_v3_chip_hours"]
    chips = par["deepseek_v3_training_chips"]
    bf16 = Evaluator(presets, TIMED_CHIP, TIMED_MODEL)
    mfu = bf16.q("training_mfu", training_chip_hours=hours)
    frontier_time = bf16.q("training_time", training_flops=c_pre, training_chips=chips, mfu=mfu)
    kimi = Evaluator(presets, TIMED_CHIP, "kimi_k2")
    return {
        "even": {
            "product": said(product),
            "each": said(even),
            "sum": said(2 * even),
            "big": said(lopsided),
            "small": said((product / lopsided).to("FLOP")),
            "lopsided_sum": said((lopsided + product / lopsided).to("FLOP")),
            "excess": said_number(100 * ((lopsided + product / lopsided) / (2 * even) - 1).m),
            "balanced_sum": said(2 * even),
        },
        "frontier_run": {
            "deepseek_multiple": said((c_pre / bf16.q("training_flops")).to("")),
            "mfu": said(mfu),
            "mfu_rough": rough(mfu),
            "inefficiency_mfu": said(1 / par["inference_inefficiency"], 2),
            "years": said(frontier_time.to("year")),
            "chips_needed": said((chips * frontier_time / par["deployment_time"]).to("chip")),
            "kimi_days": said(kimi.q("training_time", training_chips=chips, mfu=mfu).to("day")),
            "kimi_flops": kimi.text("training_flops"),
        },
        "full_mfu": {
            "ratio": said(plain.q("pretrain_inference_token_ratio", inference_inefficiency=1)),
            "factor": said(
                ev.q(
                    "overtraining_factor",
                    training_tokens=d_inf
                    * plain.q("pretrain_inference_token_ratio", inference_inefficiency=1),
                )
            ),
        },
        "forward_per_token": said(c_f),
        "train_per_token": said(3 * c_f),
        "six": said_number((3 * c_f).m),
        "four": said_number((2 * c_f).m),  # the backward pass: two matmuls the forward's size
        "eight": said_number((4 * c_f).m),  # with full recomputation: a second forward pass
        "two": said_number(c_f.m),
        "rl_per_token": said(par["rl_flops_per_param_token"]),
        "rl_bare": said_number(par["rl_flops_per_param_token"].m),
        "chain": {
            "d_inf": said(d_inf),
            "d_inf_rough": rough(d_inf.to("Ttoken")),
            "d_pre": said(d_pre),
            "d_rl": said(d_rl.to("token")),
            "c_pre": said(c_pre),
            "c_rl": said(c_rl),
            "c_inf": said(c_inf),
            # the useful FLOPs each bill's chip-time buys: its peak-FLOP over its inefficiency
            "c_inf_useful": said((c_inf / par["inference_inefficiency"]).to("FLOP")),
            "c_rl_useful": said((c_rl / par["rl_inefficiency"]).to("FLOP")),
            "per_param": said(per_param),
            "per_param_bare": said_number(per_param.m),
            "balanced_per_param": said((d_pre / frontier).to("token/parameter")),
            "overtraining_rough": rough(overtraining),
            "overtraining": said(overtraining),
            "rumour": said(rumour),
            "rumour_factor": ev.text("overtraining_factor", training_tokens=rumour),
            "rumour_share": said((c_rumour / c_inf).to("")),
            "rumour_share_rl": said((c_rumour / (c_inf + c_rl)).to(""), 2),
            "rule_share": said(Q_(rule, ""), 2),  # the equal thirds: pre-training over the rest
            "global_rate": said(par["global_inference_rate"]),
            "global_tokens": said(global_tokens),
            "global_factor": said(
                ev.q(
                    "overtraining_factor",
                    training_tokens=global_tokens * plain.q("pretrain_inference_token_ratio"),
                )
            ),
            "half_factor": said(
                ev.q(
                    "overtraining_factor",
                    training_tokens=plain.q(
                        "balanced_training_tokens", deployment_time=par["deployment_time"] / 2
                    ),
                )
            ),
            "half_deployment": said(par["deployment_time"] / 2),
        },
        "against_fits": fits,
        "fixed_slope": said_number(FIXED_PRODUCT_SLOPE),
        "hoffmann": fits[0],
        "epoch": fits[-1],
        # how far the cost optimum's split strays from the equal thirds', at most: "within 2"
        "within": rough(
            Q_(
                max(
                    max(f["train_share_value"] / rule, rule / f["train_share_value"]) for f in fits
                ),
                "",
            )
        ),
    }


def _fit_against_chain(presets: Presets, fit: str, n, d_pre, d_inf, d_rl) -> dict:
    """Where the equal-cost model (``n`` active on ``d_pre``) sits against ``fit``: the
    compute-optimal tokens for a model of its size (N* is a power of the budget, so two budgets
    fix the line exactly), and the spend that truly minimises training plus serving at its loss.
    """
    ev = Evaluator(presets, fit=fit)
    c1, c2 = Q_(1e22, "FLOP"), Q_(1e26, "FLOP")
    n1, n2 = (ev.q("compute_optimal_params", training_flops=c).to("parameter") for c in (c1, c2))
    power = np.log((n2 / n1).m) / np.log((c2 / c1).m)
    budget = c1 * ((n / n1).to("").m) ** (1 / power)
    d_star = ev.q("compute_optimal_tokens", training_flops=budget).to("token")
    best = _cost_optimum(presets, fit, n, d_pre, d_inf, d_rl)
    # the same search with pre-training charged at DeepSeek-V3's measured inefficiency
    measured = _cost_optimum(presets, fit, n, d_pre, d_inf, d_rl, _pretrain_inefficiency(presets))
    return {
        "name": presets.get("fit", fit).name,
        "short": f"{fit.split('_')[0].capitalize()} fit",
        "budget": said(budget),
        "d_star": said(d_star),
        "per_param": said((d_star / n).to("token/parameter")),
        "factor": said((d_pre / d_star).to("")),
        "factor_rough": rough((d_pre / d_star).to(""), 2),
        "slope": said_number(iso_loss_slope(presets, fit, n, d_pre), 2),
        "measured": measured,
        **best,
    }


def _pretrain_inefficiency(presets: Presets) -> float:
    """Pre-training's inefficiency (1 / MFU) as DeepSeek-V3 measured it, against its FP8 peak."""
    fp8 = Evaluator(presets, TIMED_CHIP, TIMED_MODEL, "fp8")
    hours = presets.parameter["deepseek_v3_chip_hours"].value
    return float((1 / fp8.q("training_mfu", training_chip_hours=hours)).to("").m)


def iso_loss_costs(presets: Presets, fit: str, n0, d0, d_inf, sizes, d_rl=None, eta_pre=1.0):
    """Models of ``sizes`` active parameters that reach the loss of ``n0`` trained on ``d0``
    tokens under ``fit``: their training tokens (bisection on the loss law, which falls with
    tokens) and their pre-training and serving compute (chip-time in FLOP at peak, the lecture's
    currency) for ``d_inf`` tokens served, plus RL on ``d_rl`` tokens if given: RL's tokens, like
    the tokens served, are held fixed, so its bill too grows with the model's size. ``eta_pre``
    charges pre-training at an inefficiency too (1, the lecture's full peak, by default).

    >>> from units.presets import load
    >>> p = load(); n = Q_(1e11, "parameter"); d = Q_(2e12, "token")
    >>> tokens, train, serve = iso_loss_costs(p, "epoch_2024", n, d, d, np.array([1e11]))
    >>> round(float(tokens[0]) / 2e12, 6)
    1.0
    """
    ev = Evaluator(presets, fit=fit)
    target = ev.q("chinchilla_loss", n_active=n0, training_tokens=d0).m
    lo, hi = np.full(sizes.shape, 1e9), np.full(sizes.shape, 1e19)
    for _ in range(80):  # geometric bisection: 2^-80 of ten decades
        mid = np.sqrt(lo * hi)
        loss = ev.q(
            "chinchilla_loss", n_active=Q_(sizes, "parameter"), training_tokens=Q_(mid, "token")
        ).m
        last = lo, hi
        lo, hi = np.where(loss > target, mid, lo), np.where(loss > target, hi, mid)
        if np.array_equal(lo, last[0]) and np.array_equal(hi, last[1]):
            break  # adjacent floats: every later pass would leave them as they are
    tokens = np.sqrt(lo * hi)
    n = Q_(sizes, "parameter")
    train = ev.q("training_flops", n_active=n, training_tokens=Q_(tokens, "token"))
    serve = ev.q("inference_flops", n_active=n, inference_tokens=d_inf)
    if d_rl is not None:
        serve = serve + ev.q("rl_flops", n_active=n, rl_tokens=d_rl)
    return tokens, eta_pre * train.to("FLOP").m, serve.to("FLOP").m * np.ones(sizes.shape)


def cheapest_at_loss(
    presets: Presets, fit: str, n0, d0, d_inf, d_rl=None, eta_pre=1.0
) -> tuple[float, ...]:
    """The model that minimises pre-training plus serving (plus RL on ``d_rl`` tokens, if given)
    compute among those that reach the loss of ``n0`` active parameters trained on ``d0`` tokens,
    serving ``d_inf`` tokens: its loss, size (parameters), tokens and pre-training and
    serving-side compute (FLOP), the cheapest size on a grid refined twice around its best
    point."""
    ev = Evaluator(presets, fit=fit)
    target = ev.q("chinchilla_loss", n_active=n0, training_tokens=d0).m
    sizes = np.geomspace(n0.to("parameter").m / 10, n0.to("parameter").m * 10, 401)
    for _ in range(3):  # each pass narrows the grid to the best point's neighbours
        tokens, train, serve = iso_loss_costs(presets, fit, n0, d0, d_inf, sizes, d_rl, eta_pre)
        i = int(np.argmin(train + serve))
        best = sizes[i], tokens[i], train[i], serve[i]
        sizes = np.geomspace(sizes[max(i - 1, 0)], sizes[min(i + 1, len(sizes) - 1)], 401)
    return (float(target), *map(float, best))


def iso_loss_slope(presets: Presets, fit: str, n0, d0) -> float:
    """How steeply the tokens rise as the model shrinks along ``fit``'s iso-loss curve through
    ``n0`` on ``d0``: -d ln D / d ln N there, by a central difference. A fixed product of
    pre-training and serving cost (the equal-cost rule's premise) needs 2.

    >>> from units.presets import load
    >>> n = Q_(1e11, "parameter"); d = Q_(2e12, "token")
    >>> 1 < iso_loss_slope(load(), "epoch_2024", n, d) < 10
    True
    """
    step = 1e-3
    sizes = n0.to("parameter").m * np.exp(np.array([-step, step]))
    tokens, _, _ = iso_loss_costs(presets, fit, n0, d0, d0, sizes)
    return float(-np.log(tokens[1] / tokens[0]) / (2 * step))


def _cost_optimum(presets: Presets, fit: str, n0, d0, d_inf, d_rl, eta_pre=1.0) -> dict:
    """The cheapest model at the loss of ``n0`` on ``d0`` (:func:`cheapest_at_loss`, with RL,
    pre-training charged at ``eta_pre``), and how much more the model ``n0`` on ``d0`` costs."""
    ev = Evaluator(presets, fit=fit)
    per_param = presets.parameter["chinchilla_tokens_per_param"].value
    target, size, tokens, train, serve = cheapest_at_loss(
        presets, fit, n0, d0, d_inf, d_rl, eta_pre
    )
    heuristic = (
        (
            eta_pre * ev.q("training_flops", n_active=n0, training_tokens=d0)
            + ev.q("inference_flops", n_active=n0, inference_tokens=d_inf)
            + ev.q("rl_flops", n_active=n0, rl_tokens=d_rl)
        )
        .to("FLOP")
        .m
    )
    return {
        "loss": said(Q_(target, "")),
        "opt_params": said(Q_(size, "parameter").to("Gparameter")),
        "opt_factor": said((Q_(tokens, "token") / Q_(size, "parameter") / per_param).to("")),
        "opt_tokens": said(Q_(tokens, "token")),
        "train_share": said(Q_(train / serve, ""), 2),
        "train_share_value": float(train / serve),
        "excess": said_number(100 * (heuristic / (train + serve) - 1), 2),  # per cent
        "excess_value": float(heuristic / (train + serve) - 1),
    }


def _trained(presets: Presets, model: str) -> dict:
    ev = Evaluator(presets, model=model)
    mdl = presets.get("model", model)
    return {
        "name": mdl.name,
        "tokens": quantity(mdl.training_tokens.to("Ttoken")),
        "active": quantity(mdl.params_active.to("Gparameter")),
        "flops": ev.text("training_flops"),
        "factor": ev.text("overtraining_factor"),
        # an MoE: the same tokens against the Chinchilla count of every parameter, not the active
        "total": quantity(mdl.params_total.to("Gparameter")),
        "factor_total": said(ev.q("overtraining_factor", n_active=mdl.params_total), 2),
    }


def _fit(presets: Presets, fit: str) -> dict:
    f = presets.get("fit", fit)
    chin = Evaluator(presets, fit=fit)
    return {
        "name": f.name,
        "source": f.source_of("source"),
        "citation": f.source_of("source").split(": ", 1)[-1],  # without the source's key
        "loss": chin.text(
            "chinchilla_loss",
            n_active=presets.parameter["chinchilla_model_params"].value,
            training_tokens=presets.parameter["chinchilla_model_tokens"].value,
        ),
    }


def _budget_table(presets: Presets) -> dict:
    """N*, D* and D*/N* of each fit at each budget, in 2-3 figures as prose says them (the
    reference cards' calculators give them exactly)."""
    columns = []
    for f in presets.fit.values():
        short = f"{f.id.split('_')[0].capitalize()} fit"  # as the chapter names it
        columns += [
            (rf"{short}: N\*", "Gparameter", f.id, "compute_optimal_params"),  # \* not italic
            (r"D\*", "Ttoken", f.id, "compute_optimal_tokens"),
            (r"D\*/N\*", "token/parameter", f.id, None),
        ]
    rows = []
    for budget in BUDGETS:
        c = Q_(budget)
        cells = []
        for _, u, fit, eq in columns:
            ev = Evaluator(presets, fit=fit, training_flops=c)
            q = (
                ev.q("compute_optimal_tokens") / ev.q("compute_optimal_params")
                if eq is None
                else ev.q(eq)
            )
            cells.append(spoken_number(q.to(u).magnitude))
        rows.append({"budget": said(c), "cells": cells})
    return {"headers": [header(n, u) for n, u, _, _ in columns], "rows": rows}


TIMED_MODEL = "deepseek_v3"
TIMED_CHIP = "h100_sxm"  # DeepSeek trained on H800s: the H100's compute, less NVLink bandwidth


def _training_time(presets: Presets) -> dict:
    """DeepSeek-V3's MFU from its reported chip-hours (at FP8 and at BF16 peak), and the
    wall-clock time on its cluster at that MFU, which returns the chip-hours over the chips."""
    hours = presets.parameter["deepseek_v3_chip_hours"].value
    chips = presets.parameter["deepseek_v3_training_chips"].value
    fp8 = Evaluator(presets, TIMED_CHIP, TIMED_MODEL, "fp8")
    bf16 = Evaluator(presets, TIMED_CHIP, TIMED_MODEL)
    mfu = fp8.q("training_mfu", training_chip_hours=hours)
    return {
        "timed": {
            "name": presets.get("model", TIMED_MODEL).name,
            "chip": chip_name(presets.get("hardware", TIMED_CHIP)),
            "tokens": quantity(presets.get("model", TIMED_MODEL).training_tokens.to("Ttoken")),
            "flops": fp8.text("training_flops"),
            "chip_hours": said(hours),
            "mfu_fp8": said(mfu),
            "inefficiency": said((1 / mfu).to(""), 2),  # the lecture's eta, for pre-training
            "mfu_bf16": bf16.text("training_mfu", training_chip_hours=hours),
            "chips": said(chips),
            "time": said(fp8.q("training_time", training_chips=chips, mfu=mfu).to("day")),
            "quoted": _quoted_mfu(presets, fp8),
            **_attention_mfu(presets, fp8, hours),
        }
    }


def _percent(share) -> str:
    """A share as a per cent to three figures: '17.3%' (the MFUs compared differ in the third)."""
    return f"{said_number(100 * share.to('').m, 3)}%"


def _quoted_mfu(presets: Presets, fp8: Evaluator) -> dict:
    """The widely quoted MFU (the scaling book's question 7) against this chapter's (reader
    blo21, fault 9): the same equation on the whole training's chip-hours and a PCIe-class FP8
    rate, each change on its own and both together."""
    par = presets.parameter
    total, pre = par["deepseek_v3_total_chip_hours"].value, par["deepseek_v3_chip_hours"].value
    peak = par["scaling_book_h800_fp8_flops"].value
    return {
        "total_hours": said(total),
        "peak": said(peak),
        "sxm_peak": said(
            fp8.detailed("training_mfu", training_chip_hours=pre).inputs["flops"].value
        ),
        "ours": _percent(fp8.q("training_mfu", training_chip_hours=pre)),
        "hours_only": _percent(fp8.q("training_mfu", training_chip_hours=total)),
        "peak_only": _percent(fp8.q("training_mfu", training_chip_hours=pre, flops=peak)),
        "both": _percent(fp8.q("training_mfu", training_chip_hours=total, flops=peak)),
    }


def _attention_mfu(presets: Presets, fp8: Evaluator, hours) -> dict:
    """DeepSeek-V3's MFU with attention's FLOPs counted too: its measured tokens per chip-second
    over the validation chapter's attention-aware bound at the mean causal prefix of its
    pre-training sequence. MLA
    trains on full heads: Q K^T at the query-key width (no-RoPE plus RoPE part), A V at the value
    width, so the bound's two products of width d_h are one of each at their mean width."""
    model = presets.get("model", TIMED_MODEL)
    sequence = presets.parameter["deepseek_v3_training_sequence"].value
    width = (
        model.get("head_dim")
        or (model.qk_nope_head_dim + model.qk_rope_head_dim + model.v_head_dim) / 2
    )
    # causal: a token's queries meet only the keys before it, on average half the sequence (the
    # masked half is skipped by flash-style kernels, so it is neither done nor counted)
    prefix = sequence / 2
    bound = fp8.q("attention_training_rate_bound", training_sequence=prefix, head_dim=width)
    square = fp8.q("attention_training_rate_bound", training_sequence=sequence, head_dim=width)
    rate = (model.training_tokens / hours).to("token/s/chip")
    return {
        "sequence": said(sequence),
        "prefix": said(prefix),
        "mfu_attention": said((rate / bound).to("")),
        "mfu_attention_square": said((rate / square).to("")),  # PaLM's convention, no mask
    }


SERVED_MEASUREMENT = "deepseek_day6_decode"  # DeepSeek's production decode, on the same H800s


def _utilisation(presets: Presets) -> dict:
    """The lecture's equal-cost rule counts each bill as chip-time (FLOP at peak) and charges
    pre-training at full peak. Counted at each bill's own measured utilisation, equal chip-time
    means 6 N D_pre / MFU_pre = 2 N D_inf eta_inf: the lecture's equation with eta_inf replaced
    by eta_inf MFU_pre, serving's inefficiency relative to pre-training's. DeepSeek-V3's
    pre-training MFU (FP8 peak) against the lecture's serving third, and against DeepSeek's own
    production decode on the same chips (also FP8 peak)."""
    par = {k: v.value for k, v in presets.parameter.items()}
    frontier, eta_inf = par["frontier_active_params"], par["inference_inefficiency"]
    fp8 = Evaluator(presets, TIMED_CHIP, TIMED_MODEL, "fp8")
    mfu_pre = fp8.q("training_mfu", training_chip_hours=par["deepseek_v3_chip_hours"]).to("")
    served = presets.get("measurement", SERVED_MEASUREMENT)
    hw = presets.get("hardware", served.hardware)
    per_token = flops_per_param_token.value * presets.get("model", served.model).params_active
    mfu_serve = (per_token * served.throughput_per_chip / hw.dense_flops_fp8).to("")
    ev = Evaluator(presets, n_active=frontier)
    plain = Evaluator(presets)

    def factor(relative):  # the over-training factor at serving's inefficiency over pre-training's
        return ev.q("balanced_overtraining_factor", inference_inefficiency=relative)

    bf16 = Evaluator(presets, TIMED_CHIP, TIMED_MODEL)
    mfu_bf16 = bf16.q("training_mfu", training_chip_hours=par["deepseek_v3_chip_hours"]).to("")
    # chips to do each bill's work in one deployment period, both read against the FP8 peak
    period = par["deployment_time"]
    c_pre = ev.q("training_flops", training_tokens=plain.q("balanced_training_tokens"))
    c_inf = ev.q("inference_flops", inference_tokens=plain.q("inference_tokens"))
    f8 = presets.get("hardware", TIMED_CHIP).dense_flops_fp8
    pre_chips = (c_pre / (mfu_pre * f8 * period)).to("chip")
    serve_chips = (c_inf / (f8 * period)).to("chip")
    # the same comparison without a FLOP convention: chip-seconds per token, served and trained
    timed = presets.get("model", TIMED_MODEL)
    trained_cost = (par["deepseek_v3_chip_hours"] / timed.training_tokens).to("chip*s/token")
    served_cost = (1 / served.throughput_per_chip).to("chip*s/token")
    return {
        # chip-milliseconds a token occupies, said as one chip's time
        "served_cost": said(Q_(served_cost.to("chip*ms/token").m, "ms")),
        "trained_cost": said(Q_(trained_cost.to("chip*ms/token").m, "ms")),
        "cost_ratio": said((served_cost / trained_cost).to("")),
        "mfu_pre": said(mfu_pre),
        "eta_pre": said(1 / mfu_pre, 2),
        "serve_lecture": said(1 / eta_inf, 2),
        "pre_chips": said(pre_chips),
        "serve_chips": said(serve_chips),
        "chip_ratio": said((pre_chips / serve_chips).to(""), 2),
        "factor_lecture_serving": said(factor(eta_inf * mfu_pre)),
        "factor_equal": said(factor(Q_(1, ""))),
        "factor_bf16": said(factor(eta_inf * mfu_bf16)),
        "mfu_serve": said(mfu_serve),
        "served_name": served.name,
        "served_rate": said(served.throughput_per_chip.to("token/s")),
        "served_chip": chip_name(hw),
        "factor_measured": said(factor(mfu_pre / mfu_serve)),
        "eta_serve": said(1 / mfu_serve, 2),
        "relative": said(mfu_pre / mfu_serve, 2),  # serving's inefficiency over pre-training's
    }
