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
    differentiate,
    given,
    rename,
    rewrite,
    solve,
    stationary,
    substitute,
)


@dataclass(frozen=True)
class Chapter:
    """A chapter of the book: one section of the lecture."""

    id: str
    title: str
    section: str
    timestamps: str


CHAPTERS = (
    Chapter("batching", "Batch size, cost and latency", "A", "00:00-32:09"),
    Chapter("moe", "Mixture of experts on racks", "B", "32:09-47:12"),
    Chapter("pipeline", "Pipelining and memory", "C and D", "47:12-1:18:59"),
    Chapter("overtraining", "Over-training, RL and Chinchilla", "E", "1:18:59-1:33:02"),
    Chapter("long_context", "Long context and API prices", "F", "1:33:02-2:04:02"),
    Chapter("reversible", "Reversible networks", "G", "2:04:02-2:13:00"),
)

# Each chapter module registers its equations (in chapter order).
from derivations import (  # noqa: E402,F401
    batching,
    long_context,
    moe,
    overtraining,
    pipeline,
    reversible,
)

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
    "differentiate",
    "given",
    "lookup_symbol",
    "register",
    "rename",
    "rewrite",
    "solve",
    "stationary",
    "substitute",
    "symbol",
    "to_latex",
]
