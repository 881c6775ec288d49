"""Planning a pre-training run from a comparable run's utilisation: the same chips, precision
and kind of model (dense after dense, mixture-of-experts after mixture-of-experts). The tokens
come from the over-training factor and Chinchilla's count, the FLOPs from 6 N D: roughly how
many days?"""

from __future__ import annotations

from book.format import number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes
from book.problem_bank.validation._published import published_mfu
from derivations import get
from derivations.notation import flops_per_param_token
from units import Q_

KIND = "estimate"
TITLE = "How many days will the pre-training take?"
USES = ("chinchilla_tokens", "training_flops", "model_flops_utilization", "training_time")
LECTURE = "1:18:59"

DENSE = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b", "llama_3_3_70b", "llama_2_70b")
SPARSE = ("qwen3_235b_a22b", "mixtral_8x7b", "gpt_oss_120b", "kimi_k2")
COMPARABLE = {  # a run with an MFU, and the new models it is comparable with
    "llama3_405b_pretraining": DENSE,  # Meta's stated MFU (no rate per chip published)
    "maxtext_v6e_llama31_70b": DENSE,
    "maxtext_v5p_llama2_70b": DENSE,
    "deepseek_v3_pretraining": SPARSE,  # a fine-grained MoE's MFU, for MoEs only
}
OVERTRAINED = (2, 5, 10, 20, 40)  # times Chinchilla's count for the active parameters
CHIPS = (512, 1024, 2048, 4096, 8192, 16_384)
# 6 N D and Chinchilla's tokens per parameter are recalled, the latter a rule of thumb; the
# window excludes the closest slip, timing at peak on the most efficient run (x1.6), by f².
FACTOR = 1.2
NAMES = {"bf16": "BF16", "fp8": "FP8", "fp4": "FP4"}


def _params(model) -> str:
    if model.get("experts_routed") is None:
        return f"{quantity(model.params_total)}, dense"
    return (
        f"{quantity(model.params_total)} in all, {quantity(model.params_active)} active per token"
    )


def _name(chip) -> str:
    return chip.name.split(" (")[0]


def draw(rng, presets) -> Draw:
    while True:
        run = presets.get("measurement", rng.choice(tuple(COMPARABLE)))
        model_id = rng.choice([m for m in COMPARABLE[run.id] if m != run.model])
        model = presets.get("model", model_id)
        chips = Q_(rng.choice(CHIPS), "chip")
        times = rng.choice(OVERTRAINED)
        precision = run.get("activations", run.weights)
        chip = presets.get("hardware", run.hardware)
        flops = chip.get(f"dense_flops_{precision}")
        mfu = (  # the lecture's count where the run's rate is published, else its own
            published_mfu(run, presets)[3]
            if run.get("throughput_per_chip") is not None
            else Q_(float(f"{run.mfu.to('').m:.3g}"), "")
        )
        active = model.params_active
        optimal = get("chinchilla_tokens").evaluate(n_active=active, presets=presets)
        tokens = (optimal * times).to("Ttoken")
        compute = (
            get("training_flops")
            .evaluate(model=model_id, training_tokens=tokens, presets=presets)
            .to("FLOP")
        )
        days = (
            get("training_time")
            .evaluate(
                training_flops=compute,
                training_chips=chips,
                flops=flops,
                mfu=mfu,
                presets=presets,
            )
            .to("day")
        )
        if Q_(7, "day") <= days <= Q_(365, "day"):  # a pre-training run, not an afternoon
            break
    per_param = (optimal / active).to("token/parameter")
    training = (compute / (active * tokens)).to("FLOP/parameter/token")
    forward = flops_per_param_token.value.to("FLOP/parameter/token")
    delivered = (chips * flops * mfu / Q_(1, "chip")).to("EFLOP/s")
    sparse = model.get("experts_routed") is not None
    old = presets.get("model", run.model)
    text = (
        f"You will pre-train a {model.name}-shaped model ({_params(model)}), over-trained "
        f"{number(times)} times Chinchilla's compute-optimal token count for its active "
        f"parameters, on {number(chips.m)} {_name(chip)} chips in {NAMES[precision]} "
        f"({quantity(flops)} dense each). A comparable run on the same chips in the same "
        f"precision, {old.name} ({_params(old)}), reached a model FLOPs utilisation of "
        f"{number(100 * mfu.m, 3)}% (attention's FLOPs left out); expect the same. "
        "Roughly how many days will the run take? Within a factor of "
        f"{number(FACTOR)} either way will do."
    )
    solution = (
        f"Tokens: Chinchilla's {quantity(per_param)} × {quantity(active)} × {number(times)} = "
        f"{quantity(tokens, 3)}.",
        f"FLOPs: {number(training.m)} per active parameter per token (forward "
        f"{number(forward.m)}, backward twice that) × {quantity(active)} × "
        f"{quantity(tokens, 3)} = {quantity(compute, 3)}"
        + (" (a token touches only the active experts)." if sparse else "."),
        f"The cluster delivers {number(chips.m)} × {quantity(flops)} × "
        f"{number(100 * mfu.m, 3)}% = {quantity(delivered, 3)}; {quantity(compute, 3)} over "
        f"that is about **{quantity(days, 2)}**. "
        "The estimate stands on the utilisation carrying over: the same chips, precision and "
        "kind of model"
        + (
            " (a fine-grained MoE's all-to-all keeps its MFU low; a dense model on these "
            "chips would do better)"
            if sparse
            else ""
        )
        + ". A published MFU may count a little differently (attention, embeddings), and a "
        "new cluster size or parallel layout moves it by more than the counting does.",
    )
    candidates = [
        (days * mfu.m, "You assumed the chips run at peak; carry the comparable run's MFU over."),
        (
            days * (forward / training).m,
            f"You counted {number(forward.m)} FLOP per parameter per token, the forward pass "
            f"only; training adds a backward pass twice as costly, {number(training.m)} in all.",
        ),
        (
            days / per_param.m,
            f"You took the over-training factor as tokens per parameter; Chinchilla's count is "
            f"already {quantity(per_param)}, and the factor multiplies that.",
        ),
    ]
    if sparse:
        candidates.append(
            (
                days * (model.params_total / active).to("").m,
                "You counted every parameter in the FLOPs; a token passes through only the "
                "active ones.",
            )
        )
    mistakes = [Mistake(v, why) for v, why in candidates]
    return Draw(
        hint=(
            "Tokens from the over-training factor and Chinchilla's count; FLOPs from the "
            "tokens; then the FLOPs over what the cluster delivers at the comparable MFU."
        ),
        text=text,
        answer=days,
        solution=solution,
        tolerance=FACTOR,
        mistakes=distinct_mistakes(mistakes, days, FACTOR, factor=True),
    )
