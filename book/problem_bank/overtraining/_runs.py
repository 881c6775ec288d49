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


def month_text(months) -> str:
    """A deployment's length in months with the month it means (pint's: a twelfth of a
    Julian year), so a student's 720- or 730-hour month is not left to chance.

    >>> month_text(Q_(6, "month"))
    '6 months (a month here is 730.5 hours, a twelfth of a year)'
    >>> month_text(Q_(1, "month")).split(" (")[0]
    '1 month'
    """
    from book.format import number

    hours = Q_(1, "month").to("hour")
    word = "month" if months.m == 1 else "months"
    return (
        f"{number(months.m)} {word} (a month here is {number(hours.m, 4)} hours, a twelfth of "
        "a year)"
    )


def served_text(rate, months, served) -> str:
    """The solution's step that turns a rate and months into tokens, the seconds shown."""
    from book.format import number, quantity

    seconds = months.to("s")
    word = "month" if months.m == 1 else "months"
    return (
        f"Tokens served: {quantity(rate)} × {number(months.m)} {word} ({quantity(seconds, 4)}) "
        f"= {quantity(served)}."
    )
