"""Working with equations: compose them, swap an input for another symbol, elasticities, grids.

Every operation returns a new :class:`~derivations.core.Equation` whose units are checked on
construction and whose derivation records the step, so ``check()`` verifies it like a built-in.

>>> from derivations import get
>>> floor = get("cost_per_token").compose("step_time", "compute_time")
>>> floor.id  # its output's name and a digest of its content
'cost_per_token_5dc043'
>>> round(get("crossover_batch").elasticities(hardware="h100_sxm", model="deepseek_v3")["flops"], 6)
1.0
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np
import pint
import sympy as sp

from derivations.core import (
    _NUMPY,
    CATALOGUE,
    Constant,
    Equation,
    defining,
    get,
    lookup_symbol,
    pull_factors_out_of_max,
)
from derivations.derivation import Derivation, given, substitute
from units import Q_, ChalkboardError


def _start(outer: Equation) -> list:
    """The steps a derived equation builds on: a composed equation's own derivation, else the
    equation taken as given."""
    if outer.derivation is not None and CATALOGUE.get(outer.id) is not outer:
        return list(outer.derivation.steps)
    return [given(outer.lhs.sym, outer.rhs, f"the equation {outer.id}")]


def _equation(item) -> Equation:
    return item if isinstance(item, Equation) else get(str(item))


def compose(outer: Equation, *inner) -> Equation:
    """``outer`` with each inner equation's right side put in place of its output symbol, then
    simplified (:func:`closed_form`).

    >>> from derivations import get
    >>> names = get("memory_time").compose("weight_fetch_time").rhs.free_symbols
    >>> sorted(map(str, names))  # doctest: +NORMALIZE_WHITESPACE
    ['expert_read_fraction', 'kv_fetch_time', 'mem_bandwidth', 'n_chips', 'n_total',
     'routed_weight_share', 'weight_bytes_per_value']
    """
    if not inner:
        raise ChalkboardError("compose needs at least one equation to substitute")
    rhs, steps, replaced = outer.rhs, _start(outer), outer.replaced
    for number, item in enumerate(inner, 1):
        eq = _equation(item)
        if eq.lhs.sym not in rhs.free_symbols:
            raise ChalkboardError(
                f"cannot compose {outer.id!r} with {eq.id!r}: {eq.lhs.name} is not on its "
                "right side; its symbols are: "
                + ", ".join(sorted(s.name for s in rhs.free_symbols))
            )
        rhs = rhs.subs(eq.lhs.sym, eq.rhs)
        # an input replaced by this output is now in terms of its right side too
        replaced = tuple((name, e.subs(eq.lhs.sym, eq.rhs)) for name, e in replaced)
        why, raw = f"by {eq.id}", rhs
        if number == len(inner):  # the last step states the simplified form
            rhs, why = closed_form(rhs), why + ", simplified"
        steps.append(substitute({eq.lhs.sym: eq.rhs}, outer.lhs.sym, rhs, why))
    # inputs that cancelled (the chip count in a cost per token) are still accepted
    gone = {s.name for s in raw.free_symbols - rhs.free_symbols}
    cancelled = tuple(sorted(set(outer.cancelled) | gone))
    return _derived(outer, rhs, steps, _stem(outer), replaced, "in closed form", cancelled)


def replace_input(outer: Equation, **replacements: str) -> Equation:
    """``outer`` with input symbols renamed to other declared symbols of the same dimension,
    e.g. ``batch_size="crossover_batch"``: evaluate the cost at the crossover batch.

    The replacement holds wherever an evaluation reads the input, also inside intermediates the
    right side keeps as symbols (the share of experts a batch reads, the default chip count).
    """
    rhs, steps, replaced = outer.rhs, _start(outer), outer.replaced
    for old, new in replacements.items():
        a, b = lookup_symbol(old), lookup_symbol(str(new))
        if a.sym not in outer.expanded().free_symbols:
            raise ChalkboardError(f"{old!r} is not on the right side of {outer.id!r}")
        if a.dimensionality != b.dimensionality:
            raise ChalkboardError(
                f"cannot put {b.name} ({b.dimension}) in place of {a.name} ({a.dimension})"
            )
        rhs = rhs.subs(a.sym, b.sym)
        replaced = (
            *((name, e.subs(a.sym, b.sym)) for name, e in replaced),
            (a.name, b.sym),
        )
        steps.append(substitute({a.sym: b.sym}, outer.lhs.sym, rhs, f"take {old} = {b.name}"))
    stem = _stem(outer) + "_at_" + "_".join(str(v) for v in replacements.values())
    return _derived(
        outer,
        rhs,
        steps,
        stem,
        replaced,
        "at " + ", ".join(map(str, replacements.values())).replace("_", " "),
        outer.cancelled,
    )


# Derived ids: a readable stem and a digest of the content, at most this long.
MAX_ID = 40
DIGEST = 6


@functools.lru_cache(maxsize=256)
def closed_form(expr: sp.Expr) -> sp.Expr:
    """A composed right side simplified: common factors pulled out of max and min (an identity
    over positive symbols, see :func:`~derivations.core.pull_factors_out_of_max`) and cancelled.

    >>> n, a, b = sp.symbols("n_chips flops mem_bandwidth", positive=True)
    >>> closed_form(n * sp.Max(a / n, b / n) / a)
    Max(flops, mem_bandwidth)/flops
    """
    return sp.simplify(pull_factors_out_of_max(expr))


def _stem(outer: Equation) -> str:
    return outer.stem or outer.id


def derived_id(stem: str, rhs: sp.Expr, replaced=()) -> str:
    """``stem`` (cut at a word to fit) and a digest of the right side and replacements: short,
    the same in every run, and different for different equations.

    >>> x = sp.Symbol("flops", positive=True)
    >>> derived_id("cost_per_token_at_crossover_batch", x)
    'cost_per_token_at_crossover_batch_eb18d3'
    """
    text = sp.srepr(rhs) + "|" + "|".join(f"{n}={sp.srepr(e)}" for n, e in replaced)
    digest = hashlib.sha256(text.encode()).hexdigest()[:DIGEST]
    room = MAX_ID - DIGEST - 1
    if len(stem) > room:
        stem = stem[:room]
        stem = stem[: stem.rfind("_")] if "_" in stem else stem
    return f"{stem}_{digest}"


def _derived(
    outer: Equation,
    rhs: sp.Expr,
    steps: list,
    stem: str,
    replaced: tuple,
    how: str,
    cancelled: tuple = (),
) -> Equation:
    closed = ", in closed form"
    base = outer.title.removesuffix(closed)
    title = base + (closed if how == closed[2:] else f", {how}" + closed * (base != outer.title))
    eq = Equation(
        id=derived_id(stem, rhs, replaced),
        title=title,
        lhs=outer.lhs,
        rhs=rhs,
        chapter=outer.chapter,
        source=outer.source,
        assumptions=outer.assumptions,
        derivation=Derivation(*steps),
        summary=f"{outer.id} rewritten {how}.",
        replaced=replaced,
        cancelled=cancelled,
        stem=stem,
    )
    eq.check()
    return eq


def elasticities(eq: Equation, **evaluate_kwargs) -> dict[str, float]:
    """d ln y / d ln x for every input x the evaluation reads, at the evaluated point, largest
    in size first. Computed symbolically on the fused expression, then evaluated.
    """
    resolver = eq.resolver(**evaluate_kwargs)
    expr, args = eq._fused(resolver.keep)
    values = [resolver.quantity(s.name).magnitude for s in args]
    if any(np.ndim(v) for v in values):
        raise ChalkboardError("elasticities are computed at one point: give scalar inputs")
    eq.checked(resolver.value_of(eq))  # the point itself must have a finite, positive value
    values = [np.float64(v) for v in values]  # overflow gives inf, checked below, not an error
    # Differentiate once per expression and keep the symbolic derivatives, compiled with their
    # common subexpressions shared (0.1 s for the largest; then 0.1 ms a point, where putting
    # the point's numbers into the derivatives took 0.1 s). Where double precision overflows
    # on the way to a finite elasticity (a batch of 1e155: a square of it is inf), the
    # derivatives are evaluated exactly instead, in sympy's arbitrary-precision numbers.
    key = ("elasticities", resolver.keep)
    if key not in eq._compiled:
        derivatives = {
            s.name: sp.diff(expr, s.sym) * s.sym / expr
            for s in args
            if not isinstance(lookup_symbol(s.name), Constant)
        }
        params = [a.sym for a in args]
        numeric = sp.lambdify(
            params, list(derivatives.values()), modules=_NUMPY, cse=True, docstring_limit=-1
        )
        eq._compiled[key] = (derivatives, numeric)
    derivatives, numeric = eq._compiled[key]
    with np.errstate(all="ignore"):
        found = [float(v) for v in numeric(*values)]
    if not all(np.isfinite(found)):
        point = {a.sym: sp.Float(float(v)) for a, v in zip(args, values, strict=True)}
        with np.errstate(all="ignore"):
            found = [float(el.xreplace(point)) for el in derivatives.values()]
    out = {}
    for name, value in zip(derivatives, found, strict=True):
        out[name] = value + 0.0  # no negative zero
        if not np.isfinite(out[name]):
            raise ChalkboardError(
                f"{eq.id}: the elasticity to {name} is not a finite number at these inputs "
                "(a value is too large or too small for double precision)"
            )
    return dict(sorted(out.items(), key=lambda kv: -abs(kv[1])))


def grid(eq: Equation, x: tuple[str, object], y: tuple[str, object], **kwargs) -> pint.Quantity:
    """Evaluate over every pair of two inputs' values: rows follow ``y``, columns ``x``."""
    (xn, xv), (yn, yv) = x, y
    xs, ys = (np.asarray(v, dtype=float) for v in (xv, yv))
    if xs.ndim != 1 or ys.ndim != 1:
        raise ChalkboardError("grid takes two 1-D arrays of values")
    xx, yy = np.meshgrid(xs, ys)
    sx, sy = lookup_symbol(xn), lookup_symbol(yn)
    value = eq.evaluate(
        **kwargs,
        **{xn: Q_(xx.ravel(), sx.display_unit), yn: Q_(yy.ravel(), sy.display_unit)},
    )
    mag = np.broadcast_to(value.magnitude, xx.ravel().shape).reshape(xx.shape)
    return Q_(mag, value.units)


def split_terms(eq: Equation) -> list[Equation]:
    """One equation per term of a sum or argument of a max on the right side, each with the
    same output, so each term can be evaluated on its own (which term dominates?)."""
    if not isinstance(eq.rhs, sp.Add | sp.Max) or len(eq.rhs.args) < 2:
        return []
    made = eq.recipe or f'get("{eq.id}")'
    return [
        Equation(
            f"{eq.id}_term_{i}",
            f"{eq.title}, term {i}",
            eq.lhs,
            term,
            eq.chapter,
            eq.source,
            recipe=f"split_terms({made})[{i}]",
        )
        for i, term in enumerate(eq.rhs.args)
    ]


def used_by(eq: Equation) -> list[Equation]:
    """The registered equations whose right sides use ``eq``'s output."""
    from derivations.core import equations

    return [e for e in equations() if eq in e.uses]


def dependency_graph() -> dict[str, list[str]]:
    """Every registered equation id mapped to the ids of the equations it uses."""
    from derivations.core import equations

    return {e.id: [u.id for u in e.uses] for e in equations()}


__all__ = [
    "compose",
    "defining",
    "dependency_graph",
    "elasticities",
    "grid",
    "replace_input",
    "used_by",
]
