"""The case each chapter's numbers are worked on (the calculators' defaults). An input given as a
function of the presets is read from them when the case is made.

>>> import derivations
>>> reference_case(derivations.get("crossover_batch"), __import__("units.presets").presets.load())
{'hardware': 'h100_sxm', 'model': 'deepseek_v3', 'precision': 'fp8'}
"""

from __future__ import annotations

from derivations.core import Equation
from units import ChalkboardError
from units.presets import Presets

# The case each chapter's numbers are worked on: preset choices and inputs without a default.
REFERENCE = {
    "batching": dict(hardware="h100_sxm", model="deepseek_v3", precision="fp8", batch_size=2048),
    # the chapter's worked case: DeepSeek-V3 on a GB200 rack at the batch where it turns
    # compute-bound
    "moe": dict(
        hardware="gb200_nvl72",
        model="deepseek_v3",
        precision="fp8",
        batch_size=lambda p: _moe_crossover(p),
    ),
    "pipeline": dict(hardware="gb200_nvl72", model="deepseek_v3", precision="fp8", batch_size=1),
    # the chapter's worked chain: the lecture's frontier model on its equal-cost tokens
    "overtraining": dict(
        n_active=lambda p: p.parameter["frontier_active_params"].value,
        training_tokens=lambda p: _value("balanced_training_tokens", p),
        rl_tokens=lambda p: (
            _value("balanced_training_tokens", p) / _value("pretrain_rl_token_ratio", p)
        ),
        cost_product="1e50 FLOP**2",
        fit="epoch_2024",  # the fit the chapter draws; the published Hoffmann fit is off
    ),
    "long_context": dict(
        hardware="h100_sxm",
        model="llama_3_1_70b",
        api="claude_opus_4_6",
        tier="flash_nvme",
        batch_size=64,
    ),
    "reversible": dict(model="llama_3_1_70b", batch_size=1),
    # the validation chapter's worked row (measurements.toml: MLPerf Llama-2-70B on one H200)
    "validation": dict(
        hardware="h200",
        model="llama_2_70b",
        precision="fp8",
        batch_size=512,
        n_chips="1 chip",
        context_length="656 token/sequence",
        input_tokens="512 token",
        input_output_ratio=1.78,
        measured_rate="4352 token/s/chip",
        training_sequence="4096 token",
    ),
}

# Equations whose worked example is not the chapter's case: each takes its own whole case, so a
# default never mixes two runs (one model's tokens with another's chip-hours).
EQUATION_CASES = {
    # DeepSeek-V3's run as the over-training chapter works it: its tokens, its H800 chip-hours
    # (the H100's compute) and chips, against the FP8 peak it trained at
    "training_mfu": dict(
        hardware="h100_sxm",
        model="deepseek_v3",
        precision="fp8",
        training_chip_hours=lambda p: p.parameter["deepseek_v3_chip_hours"].value,
    ),
    "training_time": dict(
        hardware="h100_sxm",
        model="deepseek_v3",
        precision="fp8",
        training_chips=lambda p: p.parameter["deepseek_v3_training_chips"].value,
        training_chip_hours=lambda p: p.parameter["deepseek_v3_chip_hours"].value,
    ),
    # the MoE chapter's headline example: the all-to-all inside one rack
    "alltoall_time": dict(
        hardware="gb200_nvl72",
        model="deepseek_v3",
        precision="fp8",
        batch_size=lambda p: _moe_crossover(p),
        racks_spanned="1 rack",
    ),
    # the reversible chapter's model over its whole pre-training run (the model card's tokens)
    "revnet_training_flops": dict(
        model="llama_3_1_70b",
        training_tokens=lambda p: p.parameter["llama_3_1_training_tokens"].value,
    ),
    # Chinchilla's own model and tokens, where the chapter reads each fit's loss
    "chinchilla_loss": dict(
        fit="epoch_2024",
        n_active=lambda p: p.parameter["chinchilla_model_params"].value,
        training_tokens=lambda p: p.parameter["chinchilla_model_tokens"].value,
    ),
}


def _value(eq_id: str, presets: Presets):
    """An input of a case that is another equation's value on the presets' defaults."""
    import derivations

    return derivations.get(eq_id).evaluate(presets=presets)


def _moe_crossover(presets: Presets):
    """The MoE chapter's batch: DeepSeek-V3's crossover on a GB200 rack at FP8, in whole
    sequences (the form shows 5,667, not 5,667.23)."""
    import derivations

    batch = derivations.get("crossover_batch").evaluate(
        presets=presets, hardware="gb200_nvl72", model="deepseek_v3", precision="fp8"
    )
    return round(batch.to("sequence").m) * batch.to("sequence").units


PRECISIONS = ("precision", "weight_precision", "kv_precision", "compute_precision")
PRESET_KINDS = ("hardware", "model", *PRECISIONS, "api", "tier", "fit", "price")


def reference_case(eq: Equation, presets: Presets) -> dict | None:
    """Evaluation keywords for ``eq``: its chapter's reference case narrowed to what it reads,
    with another model preset when the reference model lacks a figure it needs (an MLA count
    on a GQA model, say); None when nothing works."""
    from derivations.inputs import reachable

    allowed = set(reachable(eq))
    chosen = EQUATION_CASES.get(eq.id, REFERENCE.get(eq.chapter, {}))
    case = {
        k: v(presets) if callable(v) else v
        for k, v in chosen.items()
        if k in PRESET_KINDS or k in allowed
    }
    models = [case.get("model")] + [m for m in presets.ids("model") if m != case.get("model")]
    for model in models if "model" in case else [None]:
        kw = dict(case, model=model) if model else case
        try:
            eq.evaluate(presets=presets, **kw)
        except ChalkboardError:
            continue
        return kw
    return None


def precision_words(kw: dict) -> str:
    """How a case's precisions read: ``'FP8'``, or ``'FP4 weights, FP8 KV cache, FP8 math'``
    when they differ (each role not given takes ``precision``).

    >>> precision_words(dict(precision="fp8", weight_precision="fp4"))
    'FP4 weights, FP8 KV cache, FP8 math'
    """
    if not any(k in kw for k in PRECISIONS):
        return ""
    base = str(kw.get("precision") or "bf16").upper()
    roles = {
        role: str(kw.get(f"{key}_precision") or base).upper()
        for key, role in (("weight", "weights"), ("kv", "KV cache"), ("compute", "math"))
    }
    if len(set(roles.values())) == 1:
        return next(iter(roles.values()))
    return ", ".join(f"{p} {role}" for role, p in roles.items())
