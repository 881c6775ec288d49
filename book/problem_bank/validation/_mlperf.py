"""Where each MLPerf result a validation problem quotes is published, so a student can look it up.

The measurements preset (units/data/measurements.toml) names its sources (S1: the v5.1 results
repository, S16: the v6.1 submission checker log); this table adds, for each row a problem
draws, the result's folder in that repository, as ../shared/reference/measurements.md lists them.
"""

from __future__ import annotations

from units import Q_

V51 = "mlcommons/inference_results_v5.1"
V61 = "mlcommons/inference_results_v6.1"
RESULTS = {  # measurement row: (repository, the result's folder or file)
    "mlperf_h200_x8_llama2_70b_offline": (V51, "closed/Nebius/results/H200-SXM-141GBx8_TRT"),
    "mlperf_b200_x8_llama2_70b_offline": (V51, "closed/NVIDIA/results/B200-SXM-180GBx8_TRT"),
    "mlperf_gb200_x4_llama2_70b_offline": (
        V51,
        "closed/NVIDIA/results/GB200-NVL72_GB200-186GB_aarch64x4_TRT",
    ),
    "mlperf_mi300x_x8_llama2_70b_offline": (V51, "closed/AMD/results/8xMI300X_2xEPYC_9575F"),
    "mlperf_mi325x_x8_llama2_70b_offline": (V51, "closed/AMD/results/8xMI325X_2xEPYC_9575F_1"),
    "mlperf_mi355x_x8_llama2_70b_offline": (V51, "open/AMD/results/8xMI355X_2xEPYC_9575F"),
    "mlperf61_b300_x8_llama2_70b_offline": (
        V61,
        "closed/NVIDIA/results/submission_checker_log.txt",
    ),
    "mlperf61_gb300_x8_llama2_70b_offline": (
        V61,
        "closed/NVIDIA/results/submission_checker_log.txt",
    ),
}


def cited(row) -> str:
    """The row's result as a reader finds it: 'closed/AMD/results/8xMI300X_2xEPYC_9575F in
    mlcommons/inference_results_v5.1', as Markdown code.

    >>> from units.presets import load
    >>> cited(load().get("measurement", "mlperf_mi300x_x8_llama2_70b_offline"))
    '`closed/AMD/results/8xMI300X_2xEPYC_9575F` in `mlcommons/inference_results_v5.1`'
    """
    repository, where = RESULTS[row.id]
    return f"`{where}` in `{repository}`"


# Attention's own FLOPs left out of a serving bound, through the catalogue: zero cost per token
# of context (derivations.inputs.ZERO_ALLOWED); the KV cache's reads stay in. At MLPerf's few
# hundred tokens of context attention is under a hundredth of the multiplies (each problem that
# leaves it out checks so), and the statement says it is left out.
NO_ATTENTION = {
    "attention_flops_per_token": Q_(0, "FLOP/token"),
    "prefill_attention_flops": Q_(0, "FLOP/token"),
}
