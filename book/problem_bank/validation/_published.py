"""Published training runs with a measured rate per chip, the models a new run may train, and a
run's MFU backed out the way the lecture counts it (6ND over the chip's dense peak): shared by
the validation problems that carry a published utilisation to a new run."""

from __future__ import annotations

from derivations import get
from units import Q_

RUNS = (  # published runs with a measured rate per chip
    "deepseek_v3_pretraining",
    "maxtext_v6e_llama31_70b",
    "maxtext_v6e_llama31_405b",
    "maxtext_v5p_llama2_70b",
    "mlperf_train_h200_x1024_llama31_405b",
    "mlperf_train_gb200_x2560_llama31_405b",
)
NEW = (  # the new model, and its training tokens in trillions
    ("llama_3_1_8b", (15, 20)),
    ("llama_3_1_70b", (15, 20)),
    ("llama_3_1_405b", (15,)),
    ("qwen3_235b_a22b", (24, 36)),
    ("mixtral_8x7b", (8, 12)),
    ("gpt_oss_120b", (20, 30)),
    ("kimi_k2", (15.5,)),
    ("deepseek_v3", (14.8,)),
)


def published_mfu(run, presets):
    """A published run's chip peak, measured rate, bound and MFU (at the three figures a
    solution shows it), counted as the lecture does.

    >>> from units.presets import load
    >>> presets = load()
    >>> flops, measured, bound, mfu = published_mfu(presets.get("measurement", RUNS[0]), presets)
    >>> 0 < mfu.m < 1
    True
    """
    chip = presets.get("hardware", run.hardware)
    precision = run.get("activations", run.weights)
    flops = chip.get(f"dense_flops_{precision}")
    measured = (run.throughput_per_chip / Q_(1, "chip")).to("token/s/chip")
    bound = get("training_rate_bound").evaluate(
        hardware=run.hardware, model=run.model, flops=flops, presets=presets
    )
    mfu = get("model_flops_utilization").evaluate(
        measured_rate=measured, training_rate_bound=bound, presets=presets
    )
    return flops, measured, bound, Q_(float(f"{mfu.to('').m:.3g}"), "")
