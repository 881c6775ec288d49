"""The rent of each chip, USD per GPU-hour: one declared figure per chip, for every problem.

No preset prices these chips by the hour (units/data/prices.toml has the lecture's round GPU
and Google Cloud's on-demand H100, which the problems that use them name as such). So the book
declares one rent per chip, round figures in the range neoclouds quoted in 2025-26, and every
problem that rents a chip quotes this one: a student who meets the B200 in two problems meets
the same rent twice. A problem varies its scenario through the model, the batch, the context
or the target, never through a chip's rent.
"""

from __future__ import annotations

from units import Q_

DECLARED = {  # chip: USD per GPU-hour (declared, not sourced)
    "h100_sxm": 2.5,
    "h800": 2.25,
    "h200": 3.5,
    "mi300x": 2.25,
    "b200": 4.5,
    "b300": 5.5,
    "mi355x": 3.5,
    "gb200_nvl72": 5.5,
    "gb300_nvl72": 6.5,
}


def rent(hardware: str):
    """The declared rent of ``hardware``, per GPU-hour.

    >>> f"{rent('b200'):~}"
    '4.5 USD / chip / h'
    """
    return Q_(DECLARED[hardware], "USD/chip/hour")
