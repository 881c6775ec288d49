"""Checkpoint spacing in practice: what a framework's default spacing costs against the best
spacing that divides the depth."""

from __future__ import annotations

from book.format import context_tokens, number, quantity
from book.problem_bank import Draw, Mistake, distinct_mistakes, evaluate, require
from book.problem_bank.reversible._schemes import INPUTS_ONLY_NAME, every_nth
from units import Q_

KIND = "multi"
TITLE = "A checkpoint every few layers"
USES = ("layer_activation_bytes", "revnet_activation_memory", "checkpoint_activation_memory")
LECTURE = "2:04:02"

MODELS = ("llama_3_1_8b", "llama_3_1_70b", "llama_3_1_405b")  # depths with many divisors
BATCH = (1, 2, 4)
CONTEXTS = (8192, 32768)
TOL = 0.01  # three figures round within 0.5%; the continuous optimum is drawn 2.5% or more off


def _size(q) -> str:
    return quantity(q.to("GB") if q >= Q_(1, "GB") else q.to("MB"))


def _peak(layers: int, spacing: int) -> int:
    """Layers' worth of inputs held at the peak: every checkpoint, and the other inputs of the
    segment being recomputed (its first input is its checkpoint, counted once)."""
    return layers // spacing + spacing - 1


def draw(rng, presets) -> Draw:
    model_id = rng.choice(MODELS)
    model = presets.get("model", model_id)
    layers = model.layers
    divisors = [s for s in range(2, layers) if layers % s == 0]
    least = min(_peak(layers, s) for s in divisors)
    best = [s for s in divisors if _peak(layers, s) == least]
    smooth_layers = 2 * layers**0.5  # the continuous optimum, in layers' worth

    def clear(s: int) -> bool:
        """A real difference, and the continuous optimum's slip clear of it."""
        excess = _peak(layers, s) - least
        return excess >= 3 and abs((_peak(layers, s) - smooth_layers) / excess - 1) >= 2.5 * TOL

    worse = [s for s in divisors if clear(s)]
    require(bool(worse), "some spacing is clearly worse than the best")
    spacing = rng.choice(worse)
    batch = Q_(rng.choice(BATCH), "sequence")
    context = Q_(rng.choice(CONTEXTS), "token/sequence")
    case = dict(
        model=model_id,
        precision="bf16",
        batch_size=batch,
        context_length=context,
        presets=presets,
    )
    detail = evaluate("checkpoint_activation_memory", detailed=True, **case)
    smooth = detail.value.to("GB")  # twice √L layers' worth: the continuous optimum
    one = detail.inputs["revnet_activation_memory"].value.to("GB")  # one layer's input
    d = int(detail.inputs["d_model"].value.m)
    per_value = detail.inputs["activation_bytes_per_value"].value.to("byte/value")  # BF16
    mine, ideal = _peak(layers, spacing), least
    kept, kept_best = (mine * one).to("GB"), (ideal * one).to("GB")
    excess = (kept - kept_best).to("GB")
    best_words = " or ".join(str(s) for s in best)
    text = (
        f"You train {model.name} ({layers} layers, residual width {d:,}) on "
        f"{quantity(batch)} of {context_tokens(context, 5)} per GPU, with BF16 activations. "
        f"Your framework runs {INPUTS_ONLY_NAME}, with a checkpoint at the input of "
        f"{every_nth(spacing)} layer; it takes only spacings that divide the number of layers "
        "evenly. How much activation memory would you free at the peak by switching to the "
        "best spacing it allows? Answer in GB."
    )
    solution = (
        f"One layer's input for the batch: {quantity(batch)} × {context_tokens(context, 5)} × "
        f"{d:,} values × {quantity(per_value)} = {_size(one)}.",
        f"At spacing s the peak comes while the last segment is recomputed: all {layers}/s "
        f"checkpoints, plus that segment's other s − 1 inputs. Every {spacing}: "
        f"{layers // spacing} + {spacing - 1} = {mine} layers' worth, {quantity(kept)}.",
        f"The sum {layers}/s + s is least near s = √{layers} ≈ {number(layers**0.5, 3)}, "
        "because checkpoints and a segment's inputs cost the same per layer (a scheme that "
        "holds a segment's internals pays far more per segment layer, so its best spacing is "
        f"shorter, down to every layer); among "
        f"the divisors of {layers} the best is s = {best_words}: at s = {best[0]}, "
        f"{layers // best[0]} + {best[0] - 1} = {ideal} layers' worth, {quantity(kept_best)}.",
        f"Switching frees ({mine} − {ideal}) × {_size(one)} = **{quantity(excess, 3)}** at the "
        "peak. (Had you counted each segment's first input twice, both peaks would grow by one "
        "layer and the difference would not change.)",
    )
    mistakes = [
        Mistake(
            (kept - smooth).to("GB"),
            "You compared with the continuous optimum, "
            "twice √L layers' worth; the spacing must divide the number of layers.",
        ),
        Mistake(
            kept,
            "That is the whole peak at this spacing; the question asks how much "
            "the best spacing saves.",
        ),
        Mistake(
            ((layers // spacing - layers // best[0]) * one).to("GB"),
            "You counted the checkpoints only; the segment being recomputed holds its "
            "layers' inputs as well, and a wider segment holds more.",
        ),
        Mistake(  # stopping at the first step (reader 29: a third of the answer, told 2N/6N)
            one,
            f"That is one layer's input; the two peaks differ by {mine - ideal} layers' worth.",
        ),
        Mistake(
            excess / 2,
            f"A BF16 value takes {quantity(per_value)}; you counted half of that.",
        ),
    ]
    mistakes = [m for m in mistakes if m.value.m > 0]
    return Draw(
        text=text,
        answer=excess,
        solution=solution,
        tolerance=TOL,
        mistakes=distinct_mistakes(mistakes, excess, TOL),
        hint="What does the backward pass hold while it recomputes a segment, and how does "
        "that change with the spacing?",
    )
