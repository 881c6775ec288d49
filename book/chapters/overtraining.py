"""Chapter E's context: the lecture's chain from tokens served to over-training, and Chinchilla.

>>> from units.presets import load
>>> context(load())["pre_rl"]
'1.5'
"""

from book.context import Evaluator, cell_in, header
from book.format import quantity
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
        "chinchilla_params": quantity(chinchilla.to("Gparameter")),
        "chinchilla_trained": quantity(
            presets.parameter["chinchilla_model_tokens"].value.to("Ttoken")
        ),
        "frontier": quantity(frontier.to("Gparameter")),
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
    }


def _fit(presets: Presets, fit: str) -> dict:
    f = presets.get("fit", fit)
    chin = Evaluator(presets, fit=fit)
    return {
        "name": f.name,
        "source": f.source_of("source"),
        "loss": chin.text(
            "chinchilla_loss",
            n_active=presets.parameter["chinchilla_model_params"].value,
            training_tokens=presets.parameter["chinchilla_model_tokens"].value,
        ),
    }


def _budget_table(presets: Presets) -> dict:
    columns = []
    for f in presets.fit.values():
        columns += [
            (f"{f.name}: N*", "Gparameter", f.id, "compute_optimal_params"),
            ("D*", "Ttoken", f.id, "compute_optimal_tokens"),
            ("D*/N*", "token/parameter", f.id, None),
        ]
    rows = []
    for budget in BUDGETS:
        c = Q_(budget)
        cells = []
        for _, u, fit, eq in columns:
            ev = Evaluator(presets, fit=fit, training_flops=c)
            if eq is None:  # tokens per parameter at the optimum
                ratio = ev.q("compute_optimal_tokens") / ev.q("compute_optimal_params")
                cells.append(cell_in(u, lambda r=ratio: r))
            else:
                cells.append(cell_in(u, lambda ev=ev, eq=eq: ev.q(eq)))
        rows.append({"budget": quantity(c), "cells": cells})
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
            "chip": presets.get("hardware", TIMED_CHIP).name,
            "tokens": quantity(presets.get("model", TIMED_MODEL).training_tokens.to("Ttoken")),
            "flops": fp8.text("training_flops"),
            "chip_hours": quantity(hours),
            "mfu_fp8": quantity(mfu),
            "mfu_bf16": bf16.text("training_mfu", training_chip_hours=hours),
            "chips": quantity(chips),
            "time": quantity(fp8.q("training_time", training_chips=chips, mfu=mfu).to("day")),
        }
    }
