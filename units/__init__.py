"""Floor one: the unit registry, named constants and the sourced presets.

>>> from units import Q_
>>> (Q_("288 GB") / Q_("20 TB/s")).to("ms")
<Quantity(14.4, 'millisecond')>
"""

from units.errors import ChalkboardError, closest
from units.registry import Q_, Quantity, dimension_of, parse_quantity, parse_unit, ureg

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
