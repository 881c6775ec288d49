"""A training run's model and tokens, drawn the same way by every over-training problem."""

from __future__ import annotations

from units import Q_


def model_and_tokens(rng, presets, models) -> tuple:
    """``(model id, model, training tokens)`` for one of ``models``: pairs of a model id and
    its choices of training tokens in trillions (None: the model's reported count).

    >>> import random
    >>> from units.presets import load
    >>> model_id, _, tokens = model_and_tokens(random.Random(0), load(), [("kimi_k2", (10,))])
    >>> model_id, tokens.to("Ttoken").magnitude
    ('kimi_k2', 10.0)
    """
    model_id, token_choices = rng.choice(models)
    model = presets.get("model", model_id)
    tokens = (
        model.training_tokens
        if token_choices is None
        else Q_(rng.choice(token_choices), "Ttoken").to("token")
    )
    return model_id, model, tokens
