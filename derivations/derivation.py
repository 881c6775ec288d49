"""Derivations as ordered steps, each verified by sympy against the step before it.

Every step states a relation (``lhs = rhs``) and why it follows. The kinds:

- ``given``: a premise (the first step, or a fact brought in from another equation);
- ``rewrite``: the same relation rearranged: both sides equal the previous ones, or the
  difference of the sides equals the previous difference times a nonzero factor;
- ``substitute``: the previous relation with ``subs`` applied, then possibly rearranged;
- ``solve``: ``x = expr`` where the previous relation holds identically at ``x = expr``;
- ``rename``: the same right side, now named by a new symbol (``B* = ...``);
- ``differentiate``: the derivative of the previous right side with respect to a variable;
- ``stationary``: the previous right side (a derivative) set to zero, at an extremum.

The last step must be the equation itself, and (for an equation's derivation) every step must
balance dimensionally. A wrong step raises DerivationError naming the equation, the step and
what failed.

A proof is a pure function of the expressions, so a step (or a ``same``) that sympy proved is
remembered on disk (``units.diskcache``) under a hash of the exact expressions (``srepr``: names,
assumptions, structure), with sympy's version and the source of this module and of
``derivations/core.py`` as the store's version: the next build, in any process, skips the
simplification. Only proofs are kept; a step that fails is checked again every time.

>>> import sympy as sp
>>> x, y = sp.symbols("x y", positive=True)
>>> Derivation(given(y, 2 * x + 2, "premise"), rewrite(y - 2, 2 * x, "subtract 2")).verify()
>>> Derivation(given(y, 2 * x + 2, "premise"), rewrite(y, 2 * x + 1, "slip")).verify()
Traceback (most recent call last):
...
derivations.derivation.DerivationError: step 2 ('slip'): y = 2*x + 1 does not follow ... by rewrite
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from pathlib import Path

import sympy as sp

from units import ChalkboardError, diskcache

PROVED = b"proved"


@functools.cache
def _proofs() -> diskcache.Store:
    """The store of proved steps: its version names what a verdict depends on besides the
    expressions (sympy, and the code that asks it: this module and core's max rewriting)."""
    here = Path(__file__).resolve().parent
    code = diskcache.source_digest(here / "derivation.py", here / "core.py")
    return diskcache.Store("proofs", diskcache.digest(sp.__version__, code)[:32])


_inside = threading.local()  # .depth > 0 while a stored check runs: its parts are not stored apart


def _proved(kind: str, parts: tuple, prove) -> bool:
    """``prove()``, or True at once when the same ``kind`` of check on the same ``parts`` was
    proved before (by any process, see ``units.diskcache``); only True is stored. A check made
    while proving another is not looked up or stored on its own: the next build finds the outer
    verdict (and this process remembers the inner one, see ``_same``)."""
    if getattr(_inside, "depth", 0) or not diskcache.enabled():
        return prove()
    key = "\n".join([kind, *(_srepr(p) for p in parts)])
    store = _proofs()
    if store.get(key) == PROVED:
        return True
    _inside.depth = 1
    try:
        verdict = prove()
    finally:
        _inside.depth = 0
    if verdict:
        store.put(key, PROVED)
    return verdict


_SREPR: dict[int, tuple[object, str]] = {}  # id -> (the object, kept alive; its srepr)


def _srepr(obj) -> str:
    """``sp.srepr(obj)``, once per object: a step's relation is the next step's premise, and a
    derived equation re-checks the steps it builds on."""
    found = _SREPR.get(id(obj))
    if found is None or found[0] is not obj:
        if len(_SREPR) >= 4096:  # a long session (chalkboard serve) checks fresh objects
            _SREPR.clear()
        found = _SREPR[id(obj)] = (obj, sp.srepr(obj))
    return found[1]


class DerivationError(ChalkboardError):
    """A derivation step that sympy cannot confirm."""


def same(a: sp.Expr, b: sp.Expr) -> bool:
    """True when sympy proves ``a == b`` (over positive symbols)."""
    a, b = sp.sympify(a), sp.sympify(b)
    if a == b:  # the same expression (sympy's == compares structure): nothing to prove
        return True
    return _proved("same", (a, b), lambda: _same(a, b))


@functools.lru_cache(maxsize=4096)  # derived equations re-check the steps they build on
def _same(a: sp.Expr, b: sp.Expr) -> bool:
    # sound rewritings, the cheapest first: any one reaching zero proves the identity, so their
    # order changes only the time taken (never the verdict); sympy's simplify (a tenth of a
    # second on the larger sides) is the last resort
    a, b = a.doit(), b.doit()
    diff = sp.expand(a - b)
    if diff == 0:
        return True
    maxes = diff.has(sp.Max, sp.Min)
    # pushing a factor into a max is canonical, c max(x, y) = max(c x, c y) for c > 0: then the
    # arguments match pairwise (tried here with the cheap tests only, below with simplify too)
    into = (_into_max(a), _into_max(b)) if maxes else None
    if maxes and _same_arguments(*into, zero=_cheap_zero):
        return True
    if _symbolic_powers(diff) and _powers_combined(diff) == 0:
        return True
    # the two above apply to few sides and prove those at once; the point costs as much
    # (evaluating a max or a power to 30 digits), and rejects the usual wrong guess cheaply
    if _differ_at_a_point(a, b):  # not equal: sympy's slow tests below would not prove it
        return False
    if sp.cancel(diff) == 0:
        return True
    if maxes:
        # common factors pulled out of a max or min (an identity over positive symbols) and
        # cancelled bring both sides to one form: algebra.closed_form, kept by expression (a
        # composed equation's last step brings its raw right side to the stated form again)
        from derivations.algebra import closed_form

        pulled = [closed_form(x) for x in (a, b)]
        if pulled[0] == pulled[1] or sp.expand(pulled[0] - pulled[1]) == 0:
            return True
        # pulling out is not canonical (a gcd can miss a factor hidden in a sum over a
        # denominator), pushing in is
        if _same_arguments(*into):
            return True
    diff = sp.simplify(diff)
    if diff == 0:
        return True
    try:
        return diff.equals(0) is True
    except (TypeError, ValueError):  # sympy's numeric test may meet a max of nan
        return False


def _symbolic_powers(expr: sp.Expr) -> bool:
    """True when ``expr`` holds a power whose exponent is not a number (``x^(a/(a+b))``)."""
    return any(not p.exp.is_Number for p in expr.atoms(sp.Pow))


def _powers_combined(expr: sp.Expr) -> sp.Expr:
    """``expr`` with the powers of each base multiplied together (``x^a x^b = x^(a+b)``), each
    exponent brought to lowest terms, and expanded: the terms of an optimum that are equal but
    written with different exponents cancel (sympy's simplify finds the same, several times
    slower).

    >>> a, b, x = sp.symbols("a b x", positive=True)
    >>> _powers_combined(x ** (a / (a + b)) * x ** (b / (a + b)) - x)
    0
    """
    combined = sp.powsimp(expr, combine="exp")
    exponents = {
        p: sp.Pow(p.base, sp.cancel(p.exp)) for p in combined.atoms(sp.Pow) if not p.exp.is_Number
    }
    return sp.expand(combined.xreplace(exponents))


def _differ_at_a_point(a: sp.Expr, b: sp.Expr) -> bool:
    """True when ``a`` and ``b`` take clearly different values (30 digits, relative difference
    above 1e-10) at one fixed point where every symbol is positive (integers where a symbol is
    one). Only ever a rejection: an identity over positive symbols holds at that point, and a
    point where either side is not a finite number (a pole, a branch, a symbol that must not be
    positive) says nothing.

    >>> x, y = sp.symbols("x y", positive=True)
    >>> _differ_at_a_point(x * (x + y), x**2 + x * y), _differ_at_a_point(x + y, x * y)
    (False, True)
    """
    symbols = a.free_symbols | b.free_symbols
    if any(s.is_positive is False or s.is_integer is False for s in symbols):
        return False
    point = {s: _point_value(s) for s in symbols}
    try:
        values = [side.doit().evalf(30, subs=point) for side in (a, b)]
    except (TypeError, ValueError, ArithmeticError, RecursionError):
        return False
    if not all(v.is_number and v.is_finite and v.is_comparable for v in values):
        return False  # complex, undefined or not a number: no verdict
    va, vb = (float(v) for v in values)
    return abs(va - vb) > 1e-10 * max(abs(va), abs(vb))


def _point_value(symbol: sp.Symbol) -> sp.Rational:
    """A positive value for ``symbol``, fixed by its name (so a verdict is reproducible), with
    no special relation to the values of other symbols: a rational between 1/2 and 9, an integer
    from 2 to 9 where the symbol is one."""
    import zlib

    seed = zlib.crc32(symbol.name.encode("utf-8"))
    if symbol.is_integer:
        return sp.Integer(2 + seed % 8)
    return sp.Rational(101 + seed % 797, 97 + (seed >> 10) % 101)


def _into_max(expr: sp.Expr) -> sp.Expr:
    """``c * Max(x, y)`` as ``Max(c x, c y)`` when ``c`` is positive; anything else unchanged.

    >>> a, x, y = sp.symbols("a x y", positive=True)
    >>> _into_max(a * sp.Max(x, y)).args == (a * x, a * y)
    True
    """
    if isinstance(expr, sp.Mul):
        outer = [f for f in expr.args if isinstance(f, sp.Max | sp.Min)]
        if len(outer) == 1:
            coefficient = expr / outer[0]
            if coefficient.is_positive:
                args = [sp.expand(coefficient * arg) for arg in outer[0].args]
                return outer[0].func(*args, evaluate=False)
    return expr


def _same_arguments(a: sp.Expr, b: sp.Expr, zero=None) -> bool:
    """True when ``a`` and ``b`` are maxes (or mins) whose arguments are equal in pairs (each
    difference proved zero by ``zero``, :func:`_zero` unless given)."""
    zero = zero or _zero
    if not (isinstance(a, sp.Max | sp.Min) and type(a) is type(b) and len(a.args) == len(b.args)):
        return False
    rest = list(b.args)
    for x in a.args:
        match = next((y for y in rest if zero(x - y)), None)
        if match is None:
            return False
        rest.remove(match)
    return True


def _cheap_zero(expr: sp.Expr) -> bool:
    """True when ``expr`` expands or cancels to zero."""
    return sp.expand(expr) == 0 or sp.cancel(expr) == 0


def _zero(expr: sp.Expr) -> bool:
    """True when sympy proves ``expr`` zero: expanded, cancelled, or at last simplified."""
    return _cheap_zero(expr) or sp.simplify(expr) == 0


def _nonzero(expr: sp.Expr) -> bool:
    """True when sympy proves ``expr`` positive or negative: cancelled first (cheap), then
    simplified when the cancelled form says nothing."""
    for tidy in (sp.cancel, sp.simplify):
        expr = tidy(expr)
        if expr.is_positive or expr.is_negative:
            return True
    return False


def equivalent(new: sp.Eq, old: sp.Eq) -> bool:
    """True when ``new`` is ``old`` rearranged: same sides, or sides' difference times a nonzero."""
    if same(new.lhs, old.lhs) and same(new.rhs, old.rhs):
        return True
    d_new = (new.lhs - new.rhs).doit()
    d_old = (old.lhs - old.rhs).doit()
    if same(d_new, d_old) or same(d_new, -d_old):
        return True
    if same(d_old, sp.Integer(0)):
        return False
    factor = _factor_between(d_new, d_old)
    if factor is not None and (factor.is_positive or factor.is_negative):
        return True
    return _nonzero(d_new / d_old)


def _factor_between(new: sp.Expr, old: sp.Expr) -> sp.Expr | None:
    """``k`` with ``new = k old`` proved by expanding, ``k`` the ratio of ``new``'s first term
    to one of ``old``'s (a step that multiplies a relation through by a factor); None when no
    such ratio works. Cheaper than cancelling ``new / old`` when they are long sums.

    >>> a, b, x = sp.symbols("a b x", positive=True)
    >>> _factor_between(a * x - a / b, b * x - 1)
    a/b
    """
    new, old = sp.expand(new), sp.expand(old)
    first = sp.Add.make_args(new)[0]
    for term in sp.Add.make_args(old):
        factor = first / term
        if sp.expand(new - factor * old) == 0:
            return factor
    return None


@dataclass(frozen=True)
class Step:
    """One step: the relation reached, the reason, and how it follows from the previous one."""

    relation: sp.Eq
    why: str
    kind: str
    subs: tuple = ()
    unknown: sp.Symbol | None = None

    def follows_from(self, prev: sp.Eq) -> bool:
        """True when sympy proves this step from ``prev`` (a proof is remembered on disk)."""
        if self.kind == "given":
            return True
        parts = (self.relation, prev, self.subs, self.unknown)
        return _proved(f"step {self.kind}", parts, lambda: self._follows_from(prev))

    def _follows_from(self, prev: sp.Eq) -> bool:
        if self.kind == "rewrite":
            return equivalent(self.relation, prev)
        if self.kind == "substitute":
            # each side substituted: ``Eq.subs`` rebuilds an evaluated Eq, which tests the new
            # sides for equality (costly on long sides); the sides are the same either way
            subs = dict(self.subs)
            return equivalent(self.relation, _eq(prev.lhs.subs(subs), prev.rhs.subs(subs)))
        if self.kind == "rename":
            return same(self.relation.rhs, prev.rhs)
        if self.kind == "differentiate":
            return same(self.relation.rhs, sp.diff(prev.rhs, self.unknown))
        if self.kind == "stationary":
            return self.relation.rhs == 0 and same(self.relation.lhs, prev.rhs)
        if self.kind == "solve":
            lhs, rhs = self.relation.lhs, self.relation.rhs
            if lhs != self.unknown or self.unknown in rhs.free_symbols:
                return False
            return same((prev.lhs - prev.rhs).subs(self.unknown, rhs), sp.Integer(0))
        raise DerivationError(f"unknown step kind {self.kind!r}")


def _eq(lhs, rhs) -> sp.Eq:
    return sp.Eq(lhs, rhs, evaluate=False)


def given(lhs, rhs, why: str) -> Step:
    """A premise: ``lhs = rhs`` because ``why``."""
    return Step(_eq(lhs, rhs), why, "given")


def rewrite(lhs, rhs, why: str) -> Step:
    """The previous relation rearranged or simplified."""
    return Step(_eq(lhs, rhs), why, "rewrite")


def substitute(subs: dict, lhs, rhs, why: str) -> Step:
    """The previous relation with ``subs`` applied (and possibly rearranged)."""
    return Step(_eq(lhs, rhs), why, "substitute", tuple(subs.items()))


def solve(unknown: sp.Symbol, rhs, why: str) -> Step:
    """Solve the previous relation: ``unknown = rhs``."""
    return Step(_eq(unknown, rhs), why, "solve", unknown=unknown)


def rename(lhs, rhs, why: str) -> Step:
    """Name the previous right side (``rhs`` must equal it) by a new symbol ``lhs``."""
    return Step(_eq(lhs, rhs), why, "rename")


def differentiate(var: sp.Symbol, lhs, rhs, why: str) -> Step:
    """``lhs = rhs`` where ``rhs`` is the previous right side differentiated by ``var``."""
    return Step(_eq(lhs, rhs), why, "differentiate", unknown=var)


def stationary(expr, why: str) -> Step:
    """``expr = 0``: the previous right side (a derivative) vanishes at an extremum."""
    return Step(_eq(expr, sp.Integer(0)), why, "stationary")


@dataclass(frozen=True)
class Derivation:
    """Ordered steps from premises to an equation."""

    steps: tuple[Step, ...] = field(default=())

    def __init__(self, *steps: Step):
        object.__setattr__(self, "steps", tuple(steps))
        if not self.steps or self.steps[0].kind != "given":
            raise DerivationError("a derivation starts with a 'given' step")

    def verify(self) -> None:
        """Check each step against the one before it."""
        prev = None
        for number, step in enumerate(self.steps, 1):
            if prev is not None and not step.follows_from(prev):
                raise DerivationError(
                    f"step {number} ({step.why!r}): {step.relation.lhs} = {step.relation.rhs} "
                    f"does not follow from {prev.lhs} = {prev.rhs} by {step.kind}"
                )
            prev = step.relation

    def check_dimensions(self, where: str) -> None:
        """Every step balances dimensionally, and every substitution swaps like for like."""
        from derivations.core import dimension_of

        for number, step in enumerate(self.steps, 1):
            at = f"{where}, step {number} ({step.why!r})"
            pairs = [(step.relation.lhs, step.relation.rhs), *step.subs]
            for a, b in pairs:
                if b == 0:  # zero balances any dimension
                    continue
                if dimension_of(a, at) != dimension_of(b, at):
                    raise DerivationError(
                        f"{at}: '{a}' is {dimension_of(a, at)} but '{b}' is {dimension_of(b, at)}"
                    )

    def check(self, equation) -> None:
        """Verify the steps, their dimensions, and that the last one is ``equation`` itself."""
        self.check_dimensions(f"equation {equation.id!r}")
        try:
            self.verify()
        except DerivationError as err:
            raise DerivationError(f"equation {equation.id!r}: {err}") from None
        last = self.steps[-1].relation
        if last.lhs != equation.lhs.sym or not same(last.rhs, equation.rhs):
            raise DerivationError(
                f"equation {equation.id!r}: the derivation ends at {last.lhs} = {last.rhs}, "
                f"not at the equation {equation.lhs.name} = {equation.rhs}"
            )
