"""The case each chapter's numbers are worked on (cards, problems and calculators share it).

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
    "moe": dict(hardware="gb200_nvl72", model="deepseek_v3", precision="fp8", batch_size=2048),
    "pipeline": dict(hardware="gb200_nvl72", model="deepseek_v3", precision="fp8", batch_size=1),
    "overtraining": dict(
        model="kimi_k2",
        training_flops="1e25 FLOP",
        cost_product="1e50 FLOP**2",
        rl_tokens="1e13 token",
        # training time and MFU: DeepSeek-V3's 2,048 chips and 2.664M chip-hours (README), an
        # MFU of 0.4, and the H100's dense BF16 peak (facts.md) without choosing a hardware
        # preset for the whole chapter
        training_chips="2048 chip",
        training_chip_hours="2.664e6 chip*hour",
        mfu="0.4",
        flops="989.4 TFLOP/s",
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

PRECISIONS = ("precision", "weight_precision", "kv_precision", "compute_precision")
PRESET_KINDS = ("hardware", "model", *PRECISIONS, "api", "tier", "fit", "price")


def reference_case(eq: Equation, presets: Presets) -> dict | None:
    """Evaluation keywords for ``eq``: its chapter's reference case narrowed to what it reads,
    with another model preset when the reference model lacks a figure it needs (an MLA count
    on a GQA model, say); None when nothing works."""
    from derivations.inputs import reachable

    allowed = set(reachable(eq))
    case = {
        k: v for k, v in REFERENCE.get(eq.chapter, {}).items() if k in PRESET_KINDS or k in allowed
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
