"""Solving an equation for one of its inputs when algebra alone cannot: numerically.

``Equation.solve_for`` rearranges the equation symbolically, which answers only when nothing else
the evaluation reads depends on the unknown. Solving ``cost_per_token`` for ``batch_size`` is
the common case where something does: the step time depends on the batch, and so does the
default chip count (the fewest chips that hold the weights and the batch's KV cache). Then the
unknown is found numerically: the forward evaluation, defaults and all, is swept over a wide
log-spaced range of the unknown, the first crossing of the target is bracketed, and bisection
narrows it to the float. The answer is the smallest value that gives the target, so evaluating
the equation at it gives the target back. A target no value reaches, or one the value jumps
over (a default that changes in whole steps, such as the chip count), is an error that says
so and what to give.

>>> from derivations import get
>>> from units import Q_
>>> given = dict(hardware="h100_sxm", model="llama_3_1_70b", n_chips=8)
>>> r = inverse(get("cost_per_token"), "batch_size").evaluate_detailed(
...     **given, cost_per_token=Q_(1, "USD/Mtoken"))
>>> get("cost_per_token").evaluate(**given, batch_size=r.value).to("USD/Mtoken")
<Quantity(1.0, 'USD / megatoken')>
"""

from __future__ import annotations

import math

import numpy as np

from derivations.core import Equation, Input, Result, lookup_symbol
from units import Q_, ChalkboardError
from units.display import quantity

DECADES = (-6, 15)  # the unknown is searched from 1e-6 to 1e15 of its display unit
GRID = 421  # points of that search (20 per decade)
BISECTIONS = 200  # enough to reach the float on any bracket of that grid


def inverse(eq: Equation, name: str):
    """``eq`` solved for ``name``: the symbolic solution when it stands alone, else a solver
    that finds the value numerically (:class:`Numeric`). Both evaluate like an equation."""
    try:
        solved = eq.solve_for(name)
    except ChalkboardError as e:
        if "max or min" not in str(e):
            raise
        return Numeric(eq, name)
    return _Either(solved, Numeric(eq, name))


class _Either:
    """The symbolic solution; the numeric one when evaluating it needs the unknown itself."""

    def __init__(self, solved: Equation, numeric: Numeric):
        self.solved, self.numeric, self.used = solved, numeric, solved
        self.id, self.lhs = solved.id, solved.lhs

    @property
    def rhs(self):
        return self.used.rhs

    def evaluate_detailed(self, **kwargs) -> Result:
        try:
            return self.solved.evaluate_detailed(**kwargs)
        except ChalkboardError as e:
            if not str(e).startswith(f"{self.solved.id}: missing input {self.lhs.name!r}"):
                raise
        self.used = self.numeric
        return self.numeric.evaluate_detailed(**kwargs)


class Numeric:
    """``eq`` solved for ``name`` numerically (see the module's text)."""

    def _said(self, base: float) -> str:
        shown = self.eq.lhs.display_unit
        return quantity(Q_(base, self.eq.lhs.base_unit).to(shown))

    def __init__(self, eq: Equation, name: str):
        self.eq, self.lhs = eq, lookup_symbol(name)
        self.id = f"{eq.id}_for_{name}"
        if self.lhs.name == eq.lhs.name or self.lhs.name not in _reachable(eq):
            eq.solve_for(name)  # its own error: not an input
        self.rhs = f"the {name} at which {eq.lhs.name} = {eq.rhs} (solved numerically)"

    def evaluate_detailed(self, **kwargs) -> Result:
        name, target_name = self.lhs.name, self.eq.lhs.name
        if target_name not in kwargs:
            raise ChalkboardError(
                f"{self.id}: give the target with --set {target_name}=VALUE "
                f"(in {self.eq.lhs.display_unit:~})"
            )
        if name in kwargs:
            raise ChalkboardError(f"{self.id}: {name} is the unknown; do not give it")
        target = _parsed(target_name, kwargs.pop(target_name))
        unit = self.lhs.display_unit
        want = target.to(self.eq.lhs.base_unit).magnitude

        def f(x):
            """The equation's value (base units) at ``x`` of the unknown, in its display unit."""
            with np.errstate(all="ignore"):
                got = self.eq.evaluate(**kwargs, **{name: Q_(x, unit)})
            return np.asarray(got.to(self.eq.lhs.base_unit).magnitude, dtype=float)

        xs = np.logspace(*DECADES, GRID)
        ys = f(xs)
        ok = np.isfinite(ys)
        above = ys > want
        i = next(
            (
                k
                for k in range(GRID - 1)
                if ok[k] and ok[k + 1] and above[k] != above[k + 1] or ys[k] == want
            ),
            None,
        )
        if i is None:
            reach = f": from {_said(xs[0], unit)} to {_said(xs[-1], unit)} of {name} it is "
            if ok.any():
                low, high = (self._said(v) for v in (ys[ok].min(), ys[ok].max()))
                reach += f"between {low} and {high}"
            else:
                reach += "never a finite number"
            raise ChalkboardError(
                f"{self.id}: no {name} gives {target_name} = {quantity(target)}{reach}"
            )
        lo, hi = math.log(xs[i]), math.log(xs[i + 1])
        side = above[i]
        for _ in range(BISECTIONS):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            y = float(f(math.exp(mid)))
            if y == want:
                lo = hi = mid
                break
            if (y > want) == side and math.isfinite(y):
                lo = mid
            else:
                hi = mid
        x = math.exp(hi)
        result = self.eq.evaluate_detailed(**kwargs, **{name: Q_(x, unit)})
        got = result.value.to(self.eq.lhs.base_unit).magnitude
        if not math.isclose(got, want, rel_tol=1e-6):
            before = self.eq.evaluate_detailed(**kwargs, **{name: Q_(math.exp(lo), unit)})
            steps = [
                n
                for n, i in result.inputs.items()
                if n != name
                and n in before.inputs
                and i.base != before.inputs[n].base
                and not i.origin.startswith("equation")
            ]
            hold = f"; hold {steps[0]} fixed with --set {steps[0]}=VALUE" if steps else ""
            raise ChalkboardError(
                f"{self.id}: no {name} gives exactly {target_name} = {quantity(target)}: it "
                f"jumps from {quantity(before.value)} to {quantity(result.value)} at {name} = "
                f"{_said(x, unit)}"
                + (f", where {', '.join(steps)} changes" if steps else "")
                + hold
            )
        inputs = {n: i for n, i in result.inputs.items() if n != name}
        # the target as given, then what the evaluation read
        inputs = {target_name: Input(target.to_base_units(), "given", "", self.eq.lhs), **inputs}
        value = Q_(x, unit)
        return Result(self.eq, value, inputs)


def _parsed(name: str, value):
    from derivations.inputs import parse_override

    return parse_override(name, value, f"--set {name}")


def _said(x: float, unit) -> str:
    return quantity(Q_(x, unit))


def _reachable(eq: Equation):
    from derivations.inputs import reachable

    return reachable(eq)
