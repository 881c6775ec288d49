"""Compiled equations kept across processes: a build compiles the same two hundred functions.

Compiling an equation (``Equation.compiled``) inlines its intermediates (sympy's ``subs``),
pulls common factors out of each max (a multivariate gcd) and lambdifies the result: a few
seconds per build for the catalogue, every build, for the same result. Here the outcome is kept in
the build's store (``units.diskcache``: the user's own folder, each entry sealed with the user's
HMAC key, a damaged entry a miss) under a digest of everything it is made from: the equation's
output, its right side and replaced inputs, the right side of every equation its expansion can
reach (``srepr``: names, assumptions, exact numbers), the inputs kept and swept, sympy's and
numpy's versions and the code that compiles (``core.py``, ``units/light.py``, this module).

What is kept is data: the names of the function's arguments in order, and its source as
lambdify wrote it, which is only ever read into arithmetic data (``units.light.expression_data``)
and built back from that data (``units.light.array_function``), as the fast CLI does; a source
that is more than arithmetic on numpy's names is never stored. The rebuilt function parses to
the same tree, so it gives the same bits.

>>> import os, tempfile
>>> before = os.environ.get("CHALKBOARD_CACHE_DIR")
>>> os.environ["CHALKBOARD_CACHE_DIR"] = tempfile.mkdtemp()
>>> import dataclasses
>>> from derivations import get
>>> eq = dataclasses.replace(get("hbm_drain_time"))  # nothing compiled in this process yet
>>> fn = eq.compiled()
>>> found = load(eq, frozenset(), frozenset())
>>> found[1] == eq.compiled_source()[0], found[0](3.35e12, 80e9) == fn(3.35e12, 80e9)
(True, True)
>>> _ = os.environ.pop("CHALKBOARD_CACHE_DIR") if before is None else os.environ.update(
...     CHALKBOARD_CACHE_DIR=before
... )
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import sympy as sp

from units import diskcache, light

_SREPR: dict[int, tuple[object, str]] = {}  # id -> (expression, its srepr), this process


@functools.cache
def _store() -> diskcache.Store:
    here = Path(__file__).resolve().parent
    code = diskcache.source_digest(here / "core.py", here / "stored.py", light.__file__)
    return diskcache.Store("compiled", diskcache.digest(sp.__version__, np.__version__, code)[:32])


def _srepr(expr) -> str:
    found = _SREPR.get(id(expr))
    if found is None or found[0] is not expr:
        found = _SREPR[id(expr)] = (expr, sp.srepr(expr))
    return found[1]


def closure_key(eq, keep: frozenset[str], latex: bool = False) -> str:
    """A digest of everything ``eq.expanded(keep)`` reads: its output, right side and replaced
    inputs, and the right side of every registered equation whose output it could reach; with
    ``latex``, also the LaTeX name of every symbol it reaches (for text that prints them)."""
    from derivations.core import SYMBOLS, defining

    replaced = dict(eq.replaced)
    parts = [eq.lhs.name, ",".join(sorted(keep)), _srepr(eq.rhs)]
    parts += [f"{name}={_srepr(expr)}" for name, expr in sorted(replaced.items())]
    seen = {eq.lhs.name, *keep}
    todo = [s.name for e in (eq.rhs, *replaced.values()) for s in e.free_symbols]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in replaced:
            continue
        inner = defining(name)
        if inner is None or eq.lhs.sym in inner.rhs.free_symbols:
            parts.append(f"{name}:")
            continue
        parts.append(f"{name}:{_srepr(inner.rhs)}")
        todo += [s.name for s in inner.rhs.free_symbols]
    parts[3 + len(replaced) :] = sorted(parts[3 + len(replaced) :])
    if latex:
        parts += [f"{n}={SYMBOLS[n].latex}" for n in sorted(seen) if n in SYMBOLS]
    return diskcache.digest(*parts)


def _key(eq, keep, arrays) -> str:
    return "\n".join((closure_key(eq, keep), ",".join(sorted(arrays))))


def _in_order(names: list[str]) -> tuple | None:
    """The symbols ``names`` in the catalogue's order, as ``Equation._fused`` orders them; None
    unless that is the very order stored (the function's arguments are positional)."""
    from derivations.core import SYMBOLS

    wanted = set(names)
    args = tuple(s for s in SYMBOLS.values() if s.name in wanted)
    return args if [s.name for s in args] == names else None


def load(eq, keep: frozenset[str], arrays: frozenset[str]):
    """``(function, source, global names, arguments)`` stored for ``eq.compiled(keep, arrays)``,
    or None (absent, damaged, not data, or the store is off)."""
    if not diskcache.enabled():
        return None
    blob = _store().get(_key(eq, keep, arrays))
    if blob is None:
        return None
    try:
        entry = json.loads(blob.decode("utf-8"))
        args = _in_order(entry["args"])
        if args is None:
            return None
        fn = light.array_function(entry["source"], entry["names"])
        return fn, entry["source"], entry["names"], args
    except (ValueError, KeyError, TypeError, light.NotData):
        return None


def save(eq, keep, arrays, source: str, names, args) -> None:
    """Keep what :func:`load` returns, when the source is arithmetic on numpy's names."""
    if not diskcache.enabled() or names is None:
        return
    try:
        light.array_function(source, names)  # only what can be built back is kept
    except light.NotData:
        return
    entry = {"args": [s.name for s in args], "source": source, "names": names}
    _store().put(_key(eq, keep, arrays), json.dumps(entry).encode("utf-8"))


def arguments(eq, keep: frozenset[str]) -> tuple | None:
    """The arguments of ``eq.compiled(keep)`` as stored (by any of its compiled forms), or
    None."""
    if not diskcache.enabled():
        return None
    blob = _store().get(_key(eq, keep, frozenset()) + "\nargs")
    try:
        return None if blob is None else _in_order(json.loads(blob.decode("utf-8")))
    except (ValueError, TypeError):
        return None


def save_arguments(eq, keep, args) -> None:
    if diskcache.enabled():
        names = json.dumps([s.name for s in args]).encode("utf-8")
        _store().put(_key(eq, keep, frozenset()) + "\nargs", names)


def jscode(eq, keep: frozenset[str]) -> str:
    """``sympy.jscode`` of the expression ``eq.compiled(keep)`` computes (a calculator's
    formula), kept as text: it is written into the page, never run here."""
    key = _key(eq, keep, frozenset()) + "\njs"
    blob = _store().get(key) if diskcache.enabled() else None
    if blob is not None:
        return blob.decode("utf-8")
    text = sp.jscode(eq._fused(keep)[0])
    if diskcache.enabled():
        _store().put(key, text.encode("utf-8"))
    return text


# -- facts about an equation that need sympy to find out, kept as plain text -------------------


@functools.cache
def _facts() -> diskcache.Store:
    here = Path(__file__).resolve().parent
    code = diskcache.source_digest(here / "core.py", here / "derivation.py", here / "stored.py")
    return diskcache.Store("equation-facts", diskcache.digest(sp.__version__, code)[:32])


def _kept(key: str, compute, encode, decode):
    """``compute()``, or what it was when stored under ``key`` (text this module wrote, sealed
    by the user's key; an entry that does not decode is computed again)."""
    if not diskcache.enabled():
        return compute()
    blob = _facts().get(key)
    if blob is not None:
        try:
            return decode(blob.decode("utf-8"))
        except ValueError:
            pass
    value = compute()
    _facts().put(key, encode(value).encode("utf-8"))
    return value


def expanded_latex(eq) -> str:
    """``to_latex(eq.expanded())`` (the page's fully expanded form), kept as text under the
    equation's closure (:func:`closure_key`): written into the page, never parsed."""
    from derivations.core import to_latex

    # the text prints each symbol's LaTeX name, so its key holds them too: a renamed symbol
    # (the penalty's pi -> kappa) must not keep the old text
    key = closure_key(eq, frozenset(), latex=True) + "\nexpanded latex"
    return _kept(key, lambda: to_latex(eq.expanded()), str, str)


def expanded_names(eq) -> tuple[str, ...]:
    """The names of the symbols :func:`expanded_latex` prints, kept under the same closure: a
    card's table defines each (the written-out line reaches past the equation's own inputs)."""
    key = closure_key(eq, frozenset()) + "\nexpanded names"

    def compute():
        return tuple(sorted(s.name for s in eq.expanded().free_symbols))

    return _kept(key, compute, ",".join, lambda text: tuple(text.split(",")) if text else ())


def _boolean(text: str) -> bool:
    if text not in ("true", "false"):
        raise ValueError(text)
    return text == "true"


def evaluable(eq) -> bool:
    """Whether the expanded right side is free of arbitrary functions, kept under the closure."""
    from sympy.core.function import AppliedUndef

    key = closure_key(eq, frozenset()) + "\nevaluable"
    compute = lambda: not eq.expanded().atoms(AppliedUndef)  # noqa: E731
    return _kept(key, compute, lambda v: "true" if v else "false", _boolean)


def positive(eq) -> bool:
    """Whether sympy finds the expanded right side positive, kept under the closure."""
    key = closure_key(eq, frozenset()) + "\npositive"
    compute = lambda: bool(eq.expanded().is_positive)  # noqa: E731
    return _kept(key, compute, lambda v: "true" if v else "false", _boolean)


def display_proved(eq, prove) -> None:
    """Run ``prove()`` (raises when the display form is not the right side) unless it passed
    before for these very two forms (``srepr`` of each) on this code; only a pass is kept."""
    key = diskcache.digest(_srepr(eq.display_expr), _srepr(eq.rhs)) + "\ndisplay proved"

    def compute() -> bool:
        prove()
        return True

    def decode(text: str) -> bool:
        if text != "proved":
            raise ValueError(text)
        return True

    _kept(key, compute, lambda _: "proved", decode)


# -- symbolic results kept as data: a display form, a solved equation ---------------------------

# the sympy classes a stored expression may hold besides symbols and exact numbers, each rebuilt
# from its arguments as they were (evaluate=False: the arguments kept their canonical order)
_HEADS = {c.__name__: c for c in (sp.Add, sp.Mul, sp.Pow, sp.Max, sp.Min, sp.exp, sp.log)}


class NotAnExpression(ValueError):
    """Stored data that is not an expression this module writes."""


def expression_data(expr) -> list | None:
    """``expr`` as JSON-able data: ``["s", name]`` a catalogue symbol, ``["n", p, q]`` an exact
    number, ``[head, *arguments]`` one of the heads in ``_HEADS``; None when it holds anything
    else (a float, an arbitrary function, a symbol that is not the catalogue's own).

    >>> from derivations import get
    >>> expr = get("hbm_drain_time").rhs
    >>> expression_data(expr)
    ['Mul', ['s', 'hbm_capacity'], ['Pow', ['s', 'mem_bandwidth'], ['n', -1, 1]]]
    >>> expression_from(expression_data(expr)) == expr
    True
    """
    from derivations.core import SYMBOLS

    if isinstance(expr, sp.Symbol):
        known = SYMBOLS.get(expr.name)
        return ["s", expr.name] if known is not None and known.sym == expr else None
    if isinstance(expr, sp.Rational):
        return ["n", int(expr.p), int(expr.q)]
    if _HEADS.get(type(expr).__name__) is not type(expr):
        return None
    args = [expression_data(a) for a in expr.args]
    return None if any(a is None for a in args) else [type(expr).__name__, *args]


def expression_from(data) -> sp.Expr:
    """The expression :func:`expression_data` wrote (NotAnExpression for anything else: a name
    outside the catalogue, an unknown head, a malformed node). Nothing is parsed or run."""
    from derivations.core import SYMBOLS

    if not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise NotAnExpression(repr(data)[:80])
    head, args = data[0], data[1:]
    if head == "s" and len(args) == 1 and args[0] in SYMBOLS:
        return SYMBOLS[args[0]].sym
    if head == "n" and len(args) == 2 and all(type(a) is int for a in args) and args[1] > 0:
        return sp.Rational(*args)
    if head in _HEADS and args:
        return _HEADS[head](*map(expression_from, args), evaluate=False)
    raise NotAnExpression(repr(data)[:80])


@functools.cache
def _expressions() -> diskcache.Store:
    here = Path(__file__).resolve().parent
    code = diskcache.source_digest(here / "core.py", here / "stored.py")
    return diskcache.Store("expressions", diskcache.digest(sp.__version__, code)[:32])


def _remembered_expression(key: str, compute):
    """``compute()`` (an expression), or what it returned before under ``key``: kept as
    :func:`expression_data` and built back by :func:`expression_from`. An expression that is not
    such data is returned and never stored; an entry that does not build back is computed again."""
    if not diskcache.enabled():
        return compute()
    blob = _expressions().get(key)
    if blob is not None:
        try:
            return expression_from(json.loads(blob.decode("utf-8")))
        except ValueError:  # NotAnExpression, or not JSON: computed again and replaced
            pass
    value = compute()
    data = expression_data(value)
    if data is not None:
        _expressions().put(key, json.dumps(data).encode("utf-8"))
    return value


_NOTATION: dict[str, object] = {}  # the notation's digest, by the catalogue's version


def _notation_key() -> str:
    """A digest of what :func:`derivations.core.readable` reads besides the expression: every
    shown form (``Equation.display``) and the unit constants set to 1."""
    from derivations.core import CATALOGUE, unit_constants, version

    if _NOTATION.get("version") != version():
        pairs = sorted(
            f"{_srepr(c)}->{_srepr(d)}" for eq in CATALOGUE.values() for c, d, _ in eq.display
        )
        pairs += sorted(  # written right sides: their sums print in the written order
            f"{eq.id}:{_srepr(eq.written)}" for eq in CATALOGUE.values() if eq.written is not None
        )
        constants = sorted(_srepr(c) for c in unit_constants())
        _NOTATION.update(version=version(), key=diskcache.digest(*pairs, "|", *constants))
    return _NOTATION["key"]


def display_form(eq, compute) -> sp.Expr:
    """``compute()``: the display form of ``eq`` (``readable(eq.rhs)``), kept under its right
    side (``srepr``) and the notation (:func:`_notation_key`)."""
    key = diskcache.digest(_srepr(eq.rhs), _notation_key()) + "\ndisplay form"
    return _remembered_expression(key, compute)


def solution(relation, target, compute) -> sp.Expr:
    """``compute()``: the one solution of ``relation`` for the symbol ``target`` that
    ``Equation.solve_for`` finds, kept under the relation (``srepr``), the target's name and the
    dimension of each symbol in it (which grouping of the solution reads). A relation with no
    single solution raises each time (errors are not kept)."""
    from derivations.core import lookup_symbol

    names = sorted(s.name for s in relation.free_symbols)
    dims = [f"{n}:{lookup_symbol(n).dimensionality}" for n in names]
    key = diskcache.digest(_srepr(relation), target.name, *dims) + "\nsolution"
    return _remembered_expression(key, compute)


# -- LaTeX of an expression, kept as text ------------------------------------------------------


@functools.cache
def _latex_store() -> diskcache.Store:
    here = Path(__file__).resolve().parent
    code = diskcache.source_digest(here / "core.py", here / "stored.py")
    return diskcache.Store("latex", diskcache.digest(sp.__version__, code)[:32])


def _printing_key() -> str:
    """A digest of what the LaTeX printers read besides the expression: each symbol's declared
    LaTeX and the notation's shown forms (:func:`_notation_key`, whose sums print as written)."""
    from derivations.core import SYMBOLS, version

    if _NOTATION.get("printing version") != version():
        names = sorted(f"{_srepr(s.sym)}={s.latex}" for s in SYMBOLS.values())
        key = diskcache.digest(*names, "|", _notation_key())
        _NOTATION.update({"printing version": version(), "printing": key})
    return _NOTATION["printing"]


def latex(form: str, expr, compute) -> str:
    """``compute()``: LaTeX of ``expr`` printed in ``form`` (``"shown"``: ``to_latex``,
    ``"display"``: ``to_display_latex``), kept as text under the expression (``srepr``) and the
    notation (:func:`_printing_key`). Text written into a page, never parsed."""
    if not diskcache.enabled():
        return compute()
    key = diskcache.digest(form, _srepr(expr), _printing_key())
    blob = _latex_store().get(key)
    if blob is not None:
        try:
            return blob.decode("utf-8")
        except ValueError:
            pass
    text = compute()
    _latex_store().put(key, text.encode("utf-8"))
    return text
