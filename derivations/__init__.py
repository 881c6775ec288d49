"""Floor two: the equations, their derivations, and the catalogue of them by stable id.

>>> from derivations import get
>>> eq = get("crossover_batch")
>>> eq.evaluate(hardware="h100_sxm", model="deepseek_v3", precision="fp8")
<Quantity(5356.36..., 'sequence')>
>>> eq.solve_for("mem_bandwidth").evaluate(model="deepseek_v3", flops="1978.9 TFLOP/s",
...                                         precision="fp8", crossover_batch=2400)
<Quantity(7.4765..., 'terabyte / second')>
"""

from dataclasses import dataclass

from derivations import notation  # noqa: F401  (declares the notation)
from derivations.core import (
    CATALOGUE,
    SYMBOLS,
    Constant,
    DimensionError,
    Equation,
    Result,
    Source,
    Symbol,
    constant,
    defining,
    equations,
    get,
    lookup_symbol,
    register,
    symbol,
    to_latex,
)
from derivations.derivation import (
    Derivation,
    DerivationError,
    given,
    rename,
    rewrite,
    solve,
    substitute,
)


@dataclass(frozen=True)
class Chapter:
    """A chapter of the book: one section of the lecture."""

    id: str
    title: str
    section: str
    timestamps: str


CHAPTERS = (Chapter("batching", "Batch size, cost and latency", "A", "00:00-32:09"),)

from derivations import batching  # noqa: E402,F401  (registers chapter A)

__all__ = [
    "CATALOGUE",
    "CHAPTERS",
    "SYMBOLS",
    "Chapter",
    "Constant",
    "Derivation",
    "DerivationError",
    "DimensionError",
    "Equation",
    "Result",
    "Source",
    "Symbol",
    "constant",
    "defining",
    "equations",
    "get",
    "given",
    "lookup_symbol",
    "register",
    "rename",
    "rewrite",
    "solve",
    "substitute",
    "symbol",
    "to_latex",
]
