"""The activation bytes a drawn model's layer stores per residual-stream value, counted as the
reversible-networks chapter counts Llama's (gated_activation_bytes_factor): a gated MLP,
grouped-query attention, no dropout. The presets' shared activation_bytes_factor is
Korthikanti et al.'s GPT layer (GeLU MLP, dropout masks), which a student who read the chapter
would not bring for these models.

>>> from units.presets import load
>>> presets = load()
>>> gated_factor(presets, "llama_3_1_70b").m  # the chapter's figure
40.5
"""

from __future__ import annotations

from book.problem_bank import evaluate
from units import Q_


def gated_factor(presets, model_id: str):
    """Bytes per residual-stream value a gated, grouped-query layer of ``model_id`` stores for
    its backward pass. A mixture-of-experts layer runs each token through its k routed experts
    (and any shared ones), so the hidden width the gated MLP keeps four tensors of is theirs
    together; the router's few values per token are left out.

    >>> from units.presets import load
    >>> presets = load()
    >>> gated_factor(presets, "mixtral_8x7b").m  # two experts, each as wide as Llama 3.1 8B's MLP
    69.0
    """
    model = presets.get("model", model_id)
    case = dict(model=model_id, precision="bf16", presets=presets)
    if model.get("experts_routed") is not None:  # its MoE layers' MLP is the experts'
        experts = model.experts_active + model.get("experts_shared", 0)
        case["d_ff"] = Q_(experts * model.d_ff_expert, "value")
    return evaluate("gated_activation_bytes_factor", **case).to("byte/value")
