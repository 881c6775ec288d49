"""Symbols with units, equations checked for dimensional consistency, and their evaluation.

A :class:`Symbol` is declared once (name, unit, meaning, LaTeX). An :class:`Equation` relates one
output symbol to a sympy expression of input symbols; the expression itself carries no units.
Its dimensions are checked when it is defined (every term of every sum, every argument of a max,
both sides), so a wrong formula fails at import with a message naming the equation and the term.
Numbers meet units only at the boundary: inputs are converted to base units, the expression is
evaluated by compiled numpy code, and the result gets the output symbol's unit back.

>>> from derivations import get
>>> eq = get("hbm_drain_time")
>>> eq.evaluate(hardware="h100_sxm")
<Quantity(23.880597, 'millisecond')>
>>> eq.evaluate(hbm_capacity="288 GB", mem_bandwidth="20 TB/s")
<Quantity(14.4, 'millisecond')>
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pint
import sympy as sp
from sympy.core.function import AppliedUndef

from units import Q_, ChalkboardError, closest, parse_quantity, parse_unit
from units.light import PURE, global_names, scalar_function

__all__ = [
    "CATALOGUE",
    "Constant",
    "DimensionError",
    "Equation",
    "Input",
    "Result",
    "Source",
    "Symbol",
    "constant",
    "declare",
    "equations",
    "get",
    "register",
    "symbol",
]


class DimensionError(ChalkboardError):
    """An equation whose terms, arguments or sides disagree in dimension."""


# --------------------------------------------------------------------------------------------
# Symbols


@dataclass(frozen=True)
class Symbol:
    """A quantity in the notation: stable ``name``, declared ``unit``, ``meaning`` and ``latex``.

    ``display`` is the unit values are shown in (defaults to ``unit``).

    >>> s = Symbol("mem_bandwidth", "byte/s", "HBM bandwidth of one chip", r"W", display="TB/s")
    >>> s.dimension
    '[information] / [time]'
    """

    name: str
    unit: str
    meaning: str
    latex: str
    display: str | None = None

    @property
    def sym(self) -> sp.Symbol:
        return sp.Symbol(self.name, positive=True)

    @functools.cached_property
    def dimensionality(self):
        return Q_(1, parse_unit(self.unit)).dimensionality

    @property
    def dimension(self) -> str:
        return str(self.dimensionality) if self.dimensionality else "dimensionless"

    @functools.cached_property
    def display_unit(self) -> pint.Unit:
        return parse_unit(self.display or self.unit)

    @functools.cached_property
    def base_unit(self) -> pint.Unit:
        return Q_(1, parse_unit(self.unit)).to_base_units().units


@dataclass(frozen=True)
class Constant(Symbol):
    """A symbol with a fixed value, such as 2 FLOP per parameter per token."""

    value: pint.Quantity | None = None
    source: str = ""


SYMBOLS: dict[str, Symbol] = {}


def declare(sym: Symbol) -> Symbol:
    """Add a symbol to the notation; a name may be declared once (again only identically)."""
    if not sym.name.isidentifier() or sym.name != sym.name.lower():
        raise ChalkboardError(f"symbol name {sym.name!r} must be a lower_snake_case identifier")
    parse_unit(sym.unit)
    sym.display_unit  # noqa: B018 - validates the display unit
    if sym.display and Q_(1, sym.display_unit).dimensionality != sym.dimensionality:
        raise DimensionError(
            f"symbol {sym.name!r}: display unit {sym.display!r} does not match unit {sym.unit!r}"
        )
    known = SYMBOLS.get(sym.name)
    if known is not None and known != sym:
        raise ChalkboardError(f"symbol {sym.name!r} is already declared differently: {known}")
    SYMBOLS[sym.name] = sym
    return sym


def symbol(name, unit, meaning, latex, display=None) -> Symbol:
    """Declare a symbol: ``symbol("batch_size", "sequence", "sequences per step", "B")``."""
    return declare(Symbol(name, unit, meaning, latex, display))


def constant(name, value, meaning, latex, source, display=None) -> Constant:
    """Declare a named constant with a unit: ``constant("c", "2 FLOP/parameter/token", ...)``."""
    q = parse_quantity(value, what=f"constant {name}")
    return declare(Constant(name, f"{q.units:~}", meaning, latex, display, q, source))


def lookup_symbol(name: str) -> Symbol:
    try:
        return SYMBOLS[name]
    except KeyError:
        raise ChalkboardError(f"unknown symbol {name!r}{closest(name, SYMBOLS)}") from None


# --------------------------------------------------------------------------------------------
# Dimensions

_DIMLESS = Q_(1, "dimensionless").dimensionality


def _show_dim(dims) -> str:
    return str(dims) if dims else "dimensionless"


def dimension_of(expr: sp.Expr, where: str = "expression"):
    """The pint dimensionality of a sympy expression over declared symbols.

    Raises DimensionError naming ``where`` and the offending term when a sum, max/min or
    function argument mixes dimensions.
    """
    if isinstance(expr, sp.Symbol):
        return lookup_symbol(expr.name).dimensionality
    if expr.is_Number or isinstance(expr, sp.NumberSymbol):
        return _DIMLESS
    if isinstance(expr, sp.Mul):
        dims = _DIMLESS
        symbolic: dict[sp.Expr, object] = {}  # exponent -> product of its bases' dimensions
        for arg in expr.args:
            if isinstance(arg, sp.Pow) and not arg.exp.is_Rational:
                base, exponent, sign = arg.base, arg.exp, 1
                if exponent.could_extract_minus_sign():
                    exponent, sign = -exponent, -1
                base_dims = dimension_of(base, where) ** sign
                symbolic[exponent] = symbolic.get(exponent, _DIMLESS) * base_dims
                continue
            dims = dims * dimension_of(arg, where)
        for exponent, base_dims in symbolic.items():
            # sympy splits (a/b)**x into a**x * b**(-x); together they must be dimensionless
            if base_dims != _DIMLESS:
                raise DimensionError(
                    f"{where}: the factors raised to the non-numeric power '{exponent}' in "
                    f"'{expr}' have dimension {_show_dim(base_dims)}; it must be dimensionless"
                )
        return dims
    if isinstance(expr, sp.Pow):
        base, exponent = expr.args
        if dimension_of(exponent, where) != _DIMLESS:
            raise DimensionError(f"{where}: exponent '{exponent}' must be dimensionless")
        base_dims = dimension_of(base, where)
        if base_dims == _DIMLESS:
            return _DIMLESS
        if not exponent.is_Rational:
            raise DimensionError(
                f"{where}: '{base}' has dimension {_show_dim(base_dims)} and cannot be raised "
                f"to the non-numeric power '{exponent}'"
            )
        return base_dims ** float(exponent)
    if isinstance(expr, sp.Add | sp.Max | sp.Min):
        first, *rest = expr.args
        want = dimension_of(first, where)
        for term in rest:
            got = dimension_of(term, where)
            if got != want:
                kind = "term" if isinstance(expr, sp.Add) else "argument"
                raise DimensionError(
                    f"{where}: {kind} '{term}' has dimension {_show_dim(got)}, "
                    f"but '{first}' has dimension {_show_dim(want)}"
                )
        return want
    if isinstance(expr, sp.ceiling | sp.floor | sp.Abs):
        return dimension_of(expr.args[0], where)
    if isinstance(expr, sp.Derivative):
        dims = dimension_of(expr.expr, where)
        for var, count in expr.variable_count:
            dims = dims / dimension_of(var, where) ** int(count)
        return dims
    if isinstance(expr, sp.Function):
        for arg in expr.args:
            got = dimension_of(arg, where)
            if got != _DIMLESS:
                raise DimensionError(
                    f"{where}: argument '{arg}' of {expr.func.__name__} has dimension "
                    f"{_show_dim(got)}; it must be dimensionless"
                )
        return _DIMLESS
    raise DimensionError(f"{where}: cannot check the dimension of '{expr}' ({type(expr).__name__})")


# --------------------------------------------------------------------------------------------
# Equations


@dataclass(frozen=True)
class Source:
    """Where an equation comes from: a lecture section and timestamp, or a citation."""

    section: str
    timestamp: str = ""
    note: str = ""

    def __str__(self) -> str:
        at = f" ({self.timestamp})" if self.timestamp else ""
        return f"{self.section}{at}"


@dataclass(frozen=True)
class Input:
    """One input of an evaluation: its value (in base units), where it came from, and its source."""

    base: pint.Quantity
    origin: str
    source: str = ""
    symbol: Symbol | None = None

    @property
    def value(self) -> pint.Quantity:
        """The value in the symbol's display unit."""
        return self.base.to(self.symbol.display_unit) if self.symbol else self.base


@dataclass(frozen=True)
class Result:
    """An evaluation: the value and every input that went into it (nested ones included)."""

    equation: Equation
    value: pint.Quantity
    inputs: Mapping[str, Input]


def _np_max(*args):
    return functools.reduce(np.maximum, args)


def _np_min(*args):
    return functools.reduce(np.minimum, args)


_NUMPY = [{"Max": _np_max, "Min": _np_min, "ceiling": np.ceil, "floor": np.floor}, "numpy"]


def pull_factors_out_of_max(expr: sp.Expr) -> sp.Expr:
    """Rewrite max(c a, c b) as c max(a, b) for a positive common factor c.

    Over positive symbols this is an identity; it lets factors such as the chip count cancel
    before evaluation, so the compiled code neither needs nor computes them.

    >>> a, b, n = sp.symbols("a b n", positive=True)
    >>> pull_factors_out_of_max(n * sp.Max(a / n, b / n))
    Max(a, b)
    """

    def pull(m: sp.Max) -> sp.Expr:
        args = [sp.factor_terms(sp.together(a)) for a in m.args]
        common = functools.reduce(sp.gcd, args)
        if common == 1 or not common.is_positive:
            # gcd gives up on arguments holding exp or max; a symbol's power that multiplies
            # every argument (such as 1/n_chips) still comes out
            common = _common_symbol_powers(args)
            if common == 1:
                return m
            return common * m.func(*[a / common for a in args])
        return common * m.func(*[sp.cancel(a / common) for a in args])

    return expr.replace(lambda e: isinstance(e, sp.Max | sp.Min), pull)


def _common_symbol_powers(args) -> sp.Expr:
    """The product of positive symbols' integer powers that every argument has as a factor.

    >>> a, b, n, x = sp.symbols("a b n x", positive=True)
    >>> _common_symbol_powers([a * sp.exp(x) / n, (b + sp.exp(a)) / (n * a)])
    1/n
    """
    powers = []
    for a in args:
        found: dict[sp.Symbol, int] = {}
        for factor in sp.Mul.make_args(a):
            base, exp = factor.as_base_exp()
            if isinstance(base, sp.Symbol) and base.is_positive and exp.is_Integer:
                found[base] = found.get(base, 0) + int(exp)
        powers.append(found)
    common = sp.Integer(1)
    for base in powers[0]:
        exps = [p.get(base, 0) for p in powers]
        if all(e > 0 for e in exps):
            common *= base ** min(exps)
        elif all(e < 0 for e in exps):
            common *= base ** max(exps)
    return common


def _hoisting_cse(arrays: frozenset[sp.Symbol]):
    """A cse for lambdify that first computes every part of the expression free of the swept
    ``arrays`` as one scalar, so an array is touched once per operation that needs it (a product
    of five scalars and an array is one array multiply, not five).

    >>> a, b, c, x = sp.symbols("a b c x", positive=True)
    >>> _hoisting_cse(frozenset({x}))([a * b * c * x + a / b])
    ([(_h0, a*b*c), (_h1, a/b)], [_h0*x + _h1])
    """

    def cse(exprs):
        defs: list[tuple[sp.Symbol, sp.Expr]] = []

        def scalar(e):
            if e.is_Atom:
                return e
            name = sp.Symbol(f"_h{len(defs)}")
            defs.append((name, e))
            return name

        def hoist(e):
            if e.is_Atom:
                return e
            if not e.free_symbols & arrays:
                return scalar(e)
            if isinstance(e, sp.Mul | sp.Add):
                fixed = [a for a in e.args if not a.free_symbols & arrays]
                varying = [hoist(a) for a in e.args if a.free_symbols & arrays]
                head = [scalar(e.func(*fixed))] if fixed else []
                return e.func(*head, *varying)
            return e.func(*[hoist(a) for a in e.args])

        single = isinstance(exprs, sp.Basic)  # lambdify passes one expression as itself
        bodies = [hoist(e) for e in ([exprs] if single else exprs)]
        replacements, reduced = sp.cse([d for _, d in defs] + bodies)
        named = [(name, r) for (name, _), r in zip(defs, reduced, strict=False)]
        rest = reduced[len(defs) :]
        return replacements + named, rest[0] if single else rest

    return cse


def latex_names() -> dict[sp.Symbol, str]:
    return {s.sym: s.latex for s in SYMBOLS.values()}


def to_latex(expr) -> str:
    """LaTeX of a sympy expression or relation, with every symbol's declared LaTeX."""
    return sp.latex(expr, symbol_names=latex_names(), mul_symbol=None)


@dataclass(frozen=True, eq=False)
class Equation:
    """``lhs = rhs``: an output symbol defined by an expression of input symbols.

    Dimensions are checked on construction. ``derivation`` (a Derivation) is checked by
    :meth:`check`, which the tests and the book build run for every equation.
    """

    id: str
    title: str
    lhs: Symbol
    rhs: sp.Expr
    chapter: str
    source: Source
    assumptions: tuple[str, ...] = ()
    derivation: object = None
    summary: str = ""
    solved_from: str = ""
    # what a negative result means, when it has a meaning (e.g. "no crossover"): the error says it
    when_negative: str = ""
    _compiled: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        if not self.id.isidentifier() or self.id != self.id.lower():
            raise ChalkboardError(f"equation id {self.id!r} must be snake_case")
        where = f"equation {self.id!r}"
        if self.lhs.sym in self.rhs.free_symbols:
            raise ChalkboardError(f"{where}: {self.lhs.name} appears on both sides")
        rhs_dims = dimension_of(self.rhs, where)
        if rhs_dims != self.lhs.dimensionality:
            raise DimensionError(
                f"{where}: right side '{self.rhs}' has dimension {_show_dim(rhs_dims)}, but "
                f"{self.lhs.name} is declared in {self.lhs.unit} ({self.lhs.dimension})"
            )

    # -- inspection ---------------------------------------------------------------------------

    @property
    def inputs(self) -> tuple[Symbol, ...]:
        """The symbols on the right side, in declaration order."""
        if "inputs" not in self._compiled:  # every one was declared before this equation
            names = {s.name for s in self.rhs.free_symbols}
            self._compiled["inputs"] = tuple(s for s in SYMBOLS.values() if s.name in names)
        return self._compiled["inputs"]

    @property
    def uses(self) -> tuple[Equation, ...]:
        """The registered equations whose outputs appear on this right side."""
        return tuple(
            e for s in self.inputs if (e := defining(s.name)) is not None and e is not self
        )

    def expanded(self, keep: frozenset[str] = frozenset()) -> sp.Expr:
        """The right side with registered intermediates replaced by their own right sides.

        Symbols named in ``keep`` stay as they are, and so does any intermediate whose right side
        would bring this equation's own output back in.
        """
        expr = self.rhs
        seen = {self.lhs.name, *keep}
        while True:
            subs = {
                s: eq.rhs
                for s in expr.free_symbols
                if s.name not in seen
                and (eq := defining(s.name)) is not None
                and self.lhs.sym not in eq.rhs.free_symbols
            }
            if not subs:
                return expr
            seen |= {s.name for s in subs}
            expr = expr.subs(subs)

    @property
    def relation(self) -> sp.Eq:
        return sp.Eq(self.lhs.sym, self.rhs, evaluate=False)

    def latex(self) -> str:
        """``lhs = rhs`` in LaTeX, generated from the sympy objects."""
        return to_latex(self.relation)

    def _repr_latex_(self) -> str:
        return f"$${self.latex()}$$"

    def __repr__(self) -> str:
        return f"<Equation {self.id}: {self.lhs.name} = {self.rhs}>"

    def check(self) -> None:
        """Verify every derivation step with sympy; raises DerivationError on a wrong step."""
        if self.derivation is not None:
            self.derivation.check(self)

    # -- evaluation ---------------------------------------------------------------------------

    def arguments(self, keep: frozenset[str] = frozenset()) -> tuple[Symbol, ...]:
        """The symbols the compiled function takes, in order (see :meth:`compiled`)."""
        return self._fused(keep)[1]

    def _fused(self, keep: frozenset[str]) -> tuple[sp.Expr, tuple[Symbol, ...]]:
        key = ("expr", keep)
        if key not in self._compiled:
            expr = pull_factors_out_of_max(self.expanded(keep))
            names = {s.name for s in expr.free_symbols}
            self._compiled[key] = (expr, tuple(s for s in SYMBOLS.values() if s.name in names))
        return self._compiled[key]

    def compiled(
        self, keep: frozenset[str] = frozenset(), arrays: frozenset[str] = frozenset()
    ) -> Callable:
        """A numpy function of base-unit magnitudes, positional in :meth:`arguments` order.

        Intermediates are inlined into one fused function (no round trips through units)
        except those named in ``keep``. Inputs named in ``arrays`` are multiplied in last, so
        the scalar factors fold together before any array operation.
        """
        key = ("fn", keep, arrays)
        if key not in self._compiled:
            expr, args = self._fused(keep)
            last = {
                s.sym: sp.Symbol(f"zz_{s.name}", positive=True) for s in args if s.name in arrays
            }
            params = [last.get(s.sym, s.sym) for s in args]
            cse = _hoisting_cse(frozenset(last.values())) if last else True
            fn = sp.lambdify(params, expr.xreplace(last), modules=_NUMPY, cse=cse)
            self._compiled[key] = fn
            self._compiled[("source", keep, arrays)] = (inspect.getsource(fn), global_names(fn))
        return self._compiled[key]

    def compiled_source(
        self, keep: frozenset[str] = frozenset(), arrays: frozenset[str] = frozenset()
    ) -> tuple[str, dict[str, list[str]] | None]:
        """The Python source of :meth:`compiled` and where each global it uses comes from (None
        when one is not numpy's, functools' or a builtin): what the fast CLI caches."""
        self.compiled(keep, arrays)
        return self._compiled[("source", keep, arrays)]

    def scalar(self, keep: frozenset[str] = frozenset()) -> Callable | None:
        """:meth:`compiled` (no arrays) on Python floats (``units.light.scalar_function``), or
        None when its source uses a name that has no float equivalent. It raises on overflow,
        division by zero and domain errors, where numpy would give ``inf`` or ``NaN``.

        >>> from derivations import get
        >>> eq = get("hbm_drain_time")
        >>> [s.name for s in eq.arguments()]
        ['mem_bandwidth', 'hbm_capacity']
        >>> eq.scalar()(3.35e12, 80e9)  # seconds
        0.023880597014925373
        """
        key = ("scalar", keep)
        if key not in self._compiled:
            source, names = self.compiled_source(keep)
            pure = names is not None and all(n in PURE for n in names)
            self._compiled[key] = scalar_function(source) if pure else None
        return self._compiled[key]

    def resolver(self, presets=None, precision="bf16", price=None, **kwargs):
        """The :class:`~derivations.inputs.Resolver` for one evaluation: preset choices
        (hardware, model, precision, its weight/KV/compute parts, price, api, tier, fit) and
        overrides by symbol name."""
        from derivations.inputs import CHOICE_KINDS, PRECISION_KEYWORDS, Resolver

        choices = {k: kwargs.pop(k, None) for k in CHOICE_KINDS if k not in ("rental",)}
        choices.update({k: kwargs.pop(k, None) for k in PRECISION_KEYWORDS})
        choices.update(precision=precision, rental=price)
        return Resolver.make(self, choices, presets, kwargs)

    @property
    def evaluable(self) -> bool:
        """False when the right side holds an arbitrary function (such as a Feistel round's f):
        such an equation is verified symbolically but has no numeric value."""
        if "evaluable" not in self._compiled:  # checked on every evaluation: expand once
            self._compiled["evaluable"] = not self.expanded().atoms(AppliedUndef)
        return self._compiled["evaluable"]

    def evaluate_detailed(
        self,
        hardware=None,
        model=None,
        precision="bf16",
        price=None,
        presets=None,
        *,
        api=None,
        tier=None,
        fit=None,
        weight_precision=None,
        kv_precision=None,
        compute_precision=None,
        **overrides,
    ) -> Result:
        """Evaluate on presets and overrides, returning the value and every input's origin
        (intermediate equations included)."""
        choices = dict(hardware=hardware, model=model, precision=precision, price=price)
        choices.update(
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            compute_precision=compute_precision,
        )
        resolver = self.resolver(
            presets=presets, api=api, tier=tier, fit=fit, **choices, **overrides
        )
        value = self.checked(resolver.value_of(self)).to(self.lhs.display_unit)
        resolver.record_intermediates()
        return Result(self, value, dict(resolver.used))

    def evaluate(
        self,
        hardware=None,
        model=None,
        precision="bf16",
        price=None,
        presets=None,
        *,
        api=None,
        tier=None,
        fit=None,
        weight_precision=None,
        kv_precision=None,
        compute_precision=None,
        **overrides,
    ) -> pint.Quantity:
        """The output as a pint Quantity in its display unit.

        ``hardware``, ``model``, ``precision`` and ``price`` name presets; ``overrides`` give any
        input by symbol name as a Quantity or a string such as ``"3.35 TB/s"`` (numbers only for
        dimensionless inputs). Arrays sweep: ``batch_size=np.arange(1, 1025)``. ``api``,
        ``tier`` and ``fit`` name API-price, memory-tier and scaling-law presets.

        ``precision`` is shorthand for three precisions that may differ: ``weight_precision``
        (bytes per stored weight), ``kv_precision`` (bytes per KV-cache value) and
        ``compute_precision`` (the chip's dense FLOP/s, and the bytes of activations); each
        one not given is ``precision``.

        >>> from derivations import get
        >>> case = dict(hardware="b200", model="deepseek_v3", precision="fp8", n_chips="8 chip",
        ...             batch_size=2048)
        >>> t = get("weight_fetch_time")
        >>> fp8, fp4 = t.evaluate(**case), t.evaluate(**case, weight_precision="fp4")
        >>> round(float(fp8 / fp4), 6)  # half the bytes per weight: half the weight-fetch time
        2.0
        """
        choices = dict(hardware=hardware, model=model, precision=precision, price=price)
        choices.update(
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            compute_precision=compute_precision,
        )
        resolver = self.resolver(
            presets=presets, api=api, tier=tier, fit=fit, **choices, **overrides
        )
        return self.checked(resolver.value_of(self)).to(self.lhs.display_unit)

    def checked(self, value: pint.Quantity) -> pint.Quantity:
        """``value`` (this equation's result in base units) if every element is finite and
        positive; otherwise a ChalkboardError saying so (a solve: that no positive solution
        exists for these inputs)."""
        mags = np.asarray(value.magnitude, dtype=float)
        if "positive" not in self._compiled:  # a fraction such as 1 - a/b may be exactly 0
            self._compiled["positive"] = bool(self.expanded().is_positive)
        low, high = (mags.min(), mags.max()) if mags.size else (1.0, 1.0)  # NaN gives NaN
        if high < np.inf and (low > 0 or (low == 0 and not self._compiled["positive"])):
            return value  # two passes over a sweep instead of seven
        bad = ~np.isfinite(mags) | (mags < 0) | ((mags == 0) & self._compiled["positive"])
        if not bad.any():
            return value
        first = Q_(float(mags[bad].flat[0]), value.units).to(self.lhs.display_unit)
        at = f" at {int(bad.sum())} of {mags.size} points" if mags.size > 1 else ""
        if not np.isfinite(first.magnitude):
            raise ChalkboardError(
                f"{self.id}: {self.lhs.name} is not a finite number{at} (an input is too large "
                "or too small for double precision)"
            )
        if self.solved_from:
            raise ChalkboardError(
                f"{self.id}: no positive solution for {self.lhs.name}{at}: it would be "
                f"{first.magnitude:.4g} {first.units:P}, so the given {self.solved_from} "
                "cannot be reached with these inputs"
            )
        if self.when_negative and first.magnitude < 0 and not self.solved_from:
            raise ChalkboardError(f"{self.id}: {self.when_negative}{at}")
        what = "underflows to 0" if first.magnitude == 0 else "would be negative"
        raise ChalkboardError(
            f"{self.id}: {self.lhs.name} {what} ({first.magnitude:.4g} {first.units:P}){at}; "
            "these inputs are outside the range where the equation holds"
        )

    def sweep(self, over: str, values, **kwargs) -> pint.Quantity:
        """Evaluate over an array of values of one input (compiled, vectorised)."""
        sym = lookup_symbol(over)
        arr = np.asarray(values, dtype=float)
        if arr.ndim != 1 or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
            raise ChalkboardError(
                f"sweep over {over}: values must be a 1-D array of positive numbers"
            )
        return self.evaluate(**kwargs, **{over: Q_(arr, sym.display_unit)})

    # -- algebra ------------------------------------------------------------------------------

    def compose(self, *equations) -> Equation:
        """This equation with other equations' right sides put in for their outputs (ids or
        Equations); see :func:`derivations.algebra.compose`."""
        from derivations.algebra import compose

        return compose(self, *equations)

    def replace_input(self, **replacements: str) -> Equation:
        """Rename inputs to symbols of the same dimension: ``batch_size="crossover_batch"``."""
        from derivations.algebra import replace_input

        return replace_input(self, **replacements)

    def elasticities(self, **evaluate_kwargs) -> dict[str, float]:
        """d ln(output) / d ln(input) for each input at the evaluated point, largest first."""
        from derivations.algebra import elasticities

        return elasticities(self, **evaluate_kwargs)

    def grid(self, x: tuple[str, object], y: tuple[str, object], **kwargs) -> pint.Quantity:
        """Evaluate over every pair of values of two inputs (compiled): ``(name, values)`` each."""
        from derivations.algebra import grid

        return grid(self, x, y, **kwargs)

    @property
    def used_by(self) -> tuple[Equation, ...]:
        """The registered equations whose right sides use this output."""
        return tuple(e for e in CATALOGUE.values() if self in e.uses)

    def solve_for(self, name: str) -> Equation:
        """A new equation with ``name`` as the unknown and this output as an input.

        >>> from derivations import get
        >>> get("hbm_drain_time").solve_for("mem_bandwidth").rhs
        hbm_capacity/hbm_drain_time
        """
        from derivations.derivation import Derivation, given, solve

        target = lookup_symbol(name)
        if target.name == self.lhs.name:
            return self
        rhs = self.rhs if target.sym in self.rhs.free_symbols else self.expanded()
        if target.sym not in rhs.free_symbols:
            raise ChalkboardError(
                f"{name!r} is not an input of {self.id!r}; its inputs are: "
                + ", ".join(s.name for s in self.inputs)
            )
        if rhs.has(sp.Max, sp.Min):
            raise ChalkboardError(
                f"cannot solve {self.id!r} for {name!r}: it takes a max or min, which has no "
                "single inverse; solve one of its branches instead ("
                + ", ".join(e.id for e in self.uses)
                + ")"
            )
        relation = sp.Eq(self.lhs.sym, rhs)
        try:
            solutions = sp.solve(relation, target.sym, dict=False)
        except NotImplementedError:
            solutions = []
        solutions = [s for s in solutions if s.is_positive is not False and s.is_real is not False]
        if len(solutions) != 1:
            raise ChalkboardError(
                f"cannot solve {self.id!r} for {name!r}: no unique positive solution"
            )
        derivation = Derivation(
            given(self.lhs.sym, rhs, f"the equation {self.id}"),
            solve(target.sym, solutions[0], f"solve for {name}"),
        )
        return Equation(
            id=f"{self.id}_for_{name}",
            title=f"{self.title}, solved for {target.meaning}",
            lhs=target,
            rhs=solutions[0],
            chapter=self.chapter,
            source=self.source,
            assumptions=self.assumptions,
            derivation=derivation,
            summary=f"{self.id} rearranged to give {name}.",
            solved_from=self.lhs.name,
        )


# --------------------------------------------------------------------------------------------
# Catalogue

CATALOGUE: dict[str, Equation] = {}
_BY_OUTPUT: dict[str, Equation] = {}


def register(eq: Equation) -> Equation:
    """Add an equation to the catalogue; ids and output symbols are unique."""
    if eq.id in CATALOGUE and CATALOGUE[eq.id] is not eq:
        raise ChalkboardError(f"equation id {eq.id!r} is already registered")
    if eq.lhs.name in _BY_OUTPUT and _BY_OUTPUT[eq.lhs.name] is not eq:
        raise ChalkboardError(
            f"{eq.lhs.name!r} is already defined by equation {_BY_OUTPUT[eq.lhs.name].id!r}"
        )
    CATALOGUE[eq.id] = eq
    _BY_OUTPUT[eq.lhs.name] = eq
    return eq


def defining(name: str) -> Equation | None:
    """The registered equation whose output is the symbol ``name``, if any."""
    return _BY_OUTPUT.get(name)


def get(equation_id: str) -> Equation:
    """A registered equation by id; unknown ids suggest the closest."""
    try:
        return CATALOGUE[equation_id]
    except KeyError:
        raise ChalkboardError(
            f"unknown equation {equation_id!r}{closest(equation_id, CATALOGUE)}"
        ) from None


def equations(chapter: str | None = None) -> list[Equation]:
    """Registered equations in definition order, optionally of one chapter."""
    return [e for e in CATALOGUE.values() if chapter is None or e.chapter == chapter]
