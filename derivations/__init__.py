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
from units import ChalkboardError


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
    Chapter("validation", "How close do real systems get?", "A and E, against measurements", ""),
)


def add_chapter(chapter: Chapter) -> Chapter:
    """Add a user's chapter (its equations register under ``chapter.id``); the book builds a page
    for it from the generic chapter template."""
    global CHAPTERS
    if any(c.id == chapter.id for c in CHAPTERS):
        raise ChalkboardError(f"chapter {chapter.id!r} already exists")
    if not chapter.id.isidentifier():
        raise ChalkboardError(f"chapter id {chapter.id!r} must be a snake_case identifier")
    CHAPTERS = (*CHAPTERS, chapter)
    return chapter


def load_extra(path) -> None:
    """Import a user's module of symbols, equations and chapters from a file (``--extra``).

    The file runs as Python with your permissions, like ``python file.py``, whatever its
    extension. Its equations are registered and checked like the built-in ones; any error in it
    (an exception, ``sys.exit``, even ``BaseException``) is reported as one ChalkboardError
    naming the file. Ctrl-C still interrupts.
    """
    import hashlib
    import importlib.machinery
    import importlib.util
    import sys
    import traceback
    from pathlib import Path

    path = Path(path)
    if not path.is_file():
        raise ChalkboardError(f"--extra {path}: no such file")
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    name = f"chalkboard_extra_{stem}_{digest}"  # one module per file, not per file name
    if name in sys.modules:
        return
    loader = importlib.machinery.SourceFileLoader(name, str(resolved))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    before = set(CATALOGUE)
    try:
        loader.exec_module(module)
        for eq_id in set(CATALOGUE) - before:
            CATALOGUE[eq_id].check()
    except ChalkboardError as err:
        raise ChalkboardError(f"{path}: {err}") from None
    except KeyboardInterrupt:
        raise
    except SystemExit as err:
        raise ChalkboardError(f"{path}: called sys.exit({err.code!r}) while loading") from None
    except BaseException as err:  # noqa: BLE001 - a user's file may raise anything
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == str(resolved)]
        line = f", line {frames[-1].lineno}" if frames else ""
        raise ChalkboardError(f"{path}{line}: {type(err).__name__}: {err}") from None
    sys.modules[name] = module


# Each chapter module registers its equations (in chapter order).
from derivations import (  # noqa: E402,F401
    batching,
    long_context,
    moe,
    overtraining,
    pipeline,
    reversible,
    validation,
)

__all__ = [
    "CATALOGUE",
    "CHAPTERS",
    "SYMBOLS",
    "Chapter",
    "add_chapter",
    "load_extra",
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
