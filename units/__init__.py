"""Floor one: the unit registry, named constants and the sourced presets.

>>> from units import Q_
>>> (Q_("288 GB") / Q_("20 TB/s")).to("ms")
<Quantity(14.4, 'millisecond')>

The registry (pint) loads on first use of one of these names, so that ``units.light`` (the fast
CLI's unit layer) can be imported without it.
"""

from units.errors import ChalkboardError, closest

__all__ = [
    "ChalkboardError",
    "Q_",
    "Quantity",
    "closest",
    "dimension_of",
    "parse_quantity",
    "parse_unit",
    "ureg",
]

_FROM_REGISTRY = {"Q_", "Quantity", "dimension_of", "parse_quantity", "parse_unit", "ureg"}


def __getattr__(name):
    if name in _FROM_REGISTRY:
        from units import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'units' has no attribute {name!r}")
