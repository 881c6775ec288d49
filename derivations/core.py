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

import contextlib
import contextvars
import functools
import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import pint
import sympy as sp
from sympy.polys.domains import QQ, ZZ
from sympy.polys.polytools import parallel_poly_from_expr
from sympy.polys.rings import ring
from sympy.printing.latex import LatexPrinter

from derivations import minmax  # noqa: F401  (max and min: each pair compared once)
from units import Q_, ChalkboardError, closest, parse_quantity, parse_unit
from units.display import quantity, unit
from units.light import PURE, NotData, global_names, scalar_function
from units.registry import convert

__all__ = [
    "CATALOGUE",
    "Constant",
    "DimensionError",
    "Equation",
    "Evaluation",
    "Input",
    "Result",
    "Source",
    "Symbol",
    "constant",
    "counts",
    "declare",
    "equations",
    "get",
    "recording",
    "register",
    "shown",
    "spaced",
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

    @functools.cached_property
    def sym(self) -> sp.Symbol:  # sympy symbols are immutable: one object serves every use
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

    @property
    def count(self) -> bool:
        """A count symbol: its values are whole numbers of its unit (sequences in a batch, chips,
        layers, tokens); see :func:`counts`. Sweeps round its values."""
        return self.name in COUNTS


@dataclass(frozen=True)
class Constant(Symbol):
    """A symbol with a fixed value, such as 2 FLOP per parameter per token."""

    value: pint.Quantity | None = None
    source: str = ""


class _Table(dict):
    """A dict that counts its changes: caches worked out from the notation and the catalogue
    (which symbols an evaluation may read, the LaTeX names) are kept per :func:`version`."""

    changes = 0

    def _changed(self):
        _Table.changes += 1

    def __setitem__(self, key, value):
        self._changed()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self._changed()
        super().__delitem__(key)

    def __ior__(self, other):
        self._changed()
        return super().__ior__(other)

    def clear(self):
        self._changed()
        super().clear()

    def pop(self, *args):
        self._changed()
        return super().pop(*args)

    def popitem(self):
        self._changed()
        return super().popitem()

    def setdefault(self, key, default=None):
        self._changed()
        return super().setdefault(key, default)

    def update(self, *args, **kwargs):
        self._changed()
        super().update(*args, **kwargs)


def version() -> int:
    """A number that changes whenever a symbol is declared or an equation registered (or either
    table is changed any other way)."""
    return _Table.changes


SYMBOLS: dict[str, Symbol] = _Table()


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


def symbol(name, unit, meaning, latex, display=None, count=False) -> Symbol:
    """Declare a symbol: ``symbol("batch_size", "sequence", "sequences per step", "B")``;
    ``count=True`` marks it as a count (whole numbers of its unit, see :func:`counts`)."""
    sym = declare(Symbol(name, unit, meaning, latex, display))
    if count:
        counts(sym)
    return sym


# The count symbols: quantities whose values are whole numbers of their unit (a batch of 3
# sequences, 8 chips, 61 layers), as opposed to measures and ratios (seconds, FLOP/s, a share).
COUNTS: set[str] = set()


def counts(*symbols: Symbol | str) -> None:
    """Mark declared symbols as counts (whole numbers of their unit, at least one).

    >>> lookup_symbol("batch_size").count, lookup_symbol("step_time").count
    (True, False)
    """
    for item in symbols:
        COUNTS.add(lookup_symbol(item if isinstance(item, str) else item.name).name)


def spaced(name: str, start, stop, n: int, log: bool = False) -> pint.Quantity:
    """``n`` values of input ``name`` from ``start`` to ``stop`` (each a Quantity, or text or a
    number read as any input is), evenly spaced or, with ``log``, geometrically; in the symbol's
    display unit. A count symbol's values are rounded to whole numbers of its unit (at least one)
    and repeats dropped, so there may be fewer than ``n``.

    >>> spaced("batch_size", 1, 1000, 10, log=True).magnitude
    array([   1.,    2.,    5.,   10.,   22.,   46.,  100.,  215.,  464., 1000.])
    >>> spaced("batch_size", 1, 10, 20, log=True).magnitude
    array([ 1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10.])
    """
    from derivations.inputs import parse_override

    sym = lookup_symbol(name)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ChalkboardError(f"spacing {name}: the number of values must be a whole number >= 1")
    a, b = (
        parse_override(name, v, f"spacing {name}").to(sym.display_unit).magnitude
        for v in (start, stop)
    )
    values = (np.geomspace if log else np.linspace)(a, b, int(n))
    if sym.count:
        scale = Q_(1, sym.display_unit).to(sym.unit).magnitude  # 1e9 parameters in a B
        whole = np.maximum(np.rint(values * scale), 1)
        _, first = np.unique(whole, return_index=True)
        values = whole[np.sort(first)] / scale
    return Q_(values, sym.display_unit)


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


def _dimension_grouped(expr: sp.Expr) -> sp.Expr:
    """``expr`` with positive factors taken out of symbolic powers when that is what makes its
    dimension readable: sympy solves L = A/(D/D0)^a + E for D as (D0^a A/(L-E))^(1/a), whose
    D0^a has no dimension of its own; D0 (A/(L-E))^(1/a) is the same number for positive D0.

    >>> import sympy as sp
    >>> from derivations import lookup_symbol
    >>> d0, a = lookup_symbol("fit_token_unit").sym, lookup_symbol("loss_data_exponent").sym
    >>> _dimension_grouped((d0**a * 2) ** (1 / a))
    2**(1/loss_data_exponent)*fit_token_unit
    """
    try:
        dimension_of(expr)
        return expr
    except DimensionError:
        grouped = sp.expand_power_base(expr)  # splits only factors known to be nonnegative
        try:
            dimension_of(grouped)
        except DimensionError:
            return expr
        return grouped


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
        return convert(self.base, self.symbol.display_unit) if self.symbol else self.base


def _cell(text: str) -> str:
    """Text that may sit in a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _latex_text(text: str) -> str:
    """A number with its unit as a person writes it (``'2.63 × 10¹⁴ tokens'``) as LaTeX."""
    digits = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
    match = re.fullmatch(r"(-?[\d.,]*?)(?: × )?10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)(?: (.*))?", text)
    if match:
        mantissa, power, words = match.groups()
        number = (f"{mantissa} \\times " if mantissa else "") + f"10^{{{power.translate(digits)}}}"
    else:
        number, _, words = text.partition(" ")
    number = number.replace(",", "{,}")
    return f"{number}\\ \\text{{{words}}}" if words else number


@dataclass(frozen=True)
class Result:
    r"""An evaluation: the value and every input that went into it (nested ones included).

    In Jupyter it shows as the value said as a person writes it, and a table of where each input
    came from (a preset's field, a named parameter's default, an equation, or ``given``: a
    keyword here, ``--set`` on the command line).

    >>> from derivations import get
    >>> r = get("hbm_drain_time").evaluate_detailed(hardware="h100_sxm")
    >>> r.text
    '23.88 ms'
    >>> print(r._repr_latex_())
    $t_{\mathrm{drain}} = 23.88\ \text{ms}$
    >>> print(r._repr_markdown_())
    $t_{\mathrm{drain}}$ (`hbm_drain_time`, HBM drain time) = **23.88 ms**
    <BLANKLINE>
    | input | value | from |
    |---|---|---|
    | $W$ `mem_bandwidth` | 3.35 TB/s | hardware h100_sxm: hbm_bandwidth |
    | $C_{\mathrm{HBM}}$ `hbm_capacity` | 80 GB | hardware h100_sxm: hbm_capacity |
    """

    equation: Equation
    value: pint.Quantity
    inputs: Mapping[str, Input]

    @property
    def text(self) -> str:
        """The value as a person writes it: ``'5,356 sequences'``, ``'2.63 × 10¹⁴ tokens'``."""
        return _said(self.value)

    def _repr_latex_(self) -> str:
        return f"${self.equation.lhs.latex} = {_latex_text(self.text)}$"

    def _repr_markdown_(self) -> str:
        eq = self.equation
        lines = [f"${eq.lhs.latex}$ (`{eq.id}`, {eq.title}) = **{self.text}**", ""]
        if self.inputs:
            lines += ["| input | value | from |", "|---|---|---|"]
            for name, i in self.inputs.items():
                symbol = f"${i.symbol.latex}$ " if i.symbol is not None else ""
                lines.append(f"| {symbol}`{name}` | {_cell(_said(i.value))} | {_cell(i.origin)} |")
        return "\n".join(lines)


def _said(value) -> str:
    """A quantity as a person writes it; an array of them as pint prints it."""
    if isinstance(value, pint.Quantity) and np.ndim(value.magnitude) == 0:
        return quantity(value)
    return f"{value:~P}" if isinstance(value, pint.Quantity) else str(value)


@dataclass(frozen=True)
class Evaluation:
    """One evaluation made inside :func:`recording`: the equation, the keywords it was given (by
    name, positional ones included) and its value."""

    equation: Equation
    keywords: Mapping[str, object]
    value: object


_RECORDING: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "evaluations", default=None
)


@contextlib.contextmanager
def recording() -> Iterator[list[Evaluation]]:
    """Record every evaluation made in the block (an evaluation made inside another, such as a
    cross-check of a preset's parameter count, is part of that one and not recorded).

    The book records the evaluations behind each chapter's numbers, and writes them out as the
    chapter's notebook.

    >>> from derivations import get
    >>> with recording() as made:
    ...     _ = get("hbm_drain_time").evaluate(hardware="h100_sxm")
    >>> [(e.equation.id, dict(e.keywords), e.value) for e in made]
    [('hbm_drain_time', {'hardware': 'h100_sxm'}, <Quantity(23.880597, 'millisecond')>)]
    """
    made: list[Evaluation] = []
    token = _RECORDING.set(made)
    try:
        yield made
    finally:
        _RECORDING.reset(token)


def _recorded(method):
    """Record calls of an evaluation ``method`` while :func:`recording` is active."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        made = _RECORDING.get()
        if made is None:
            return method(self, *args, **kwargs)
        token = _RECORDING.set(None)  # what this evaluation evaluates inside is part of it
        try:
            out = method(self, *args, **kwargs)
        finally:
            _RECORDING.reset(token)
        bound = signature.bind(self, *args, **kwargs).arguments
        keywords = {k: v for k, v in bound.items() if k not in ("self", "overrides")}
        keywords.update(bound.get("overrides", {}))
        value = out.value if isinstance(out, Result) else out
        made.append(Evaluation(self, keywords, value))
        return out

    return wrapper


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

    return expr.replace(lambda e: isinstance(e, sp.Max | sp.Min), _pull)


@functools.cache
def _pull(m: sp.Max) -> sp.Expr:
    """One max (or min) with its common factor pulled out; cached, since the same max recurs in
    every equation built on it (step_time in cost_per_token, throughput, ...) and the
    multivariate gcd is the slowest part of compiling the catalogue."""
    args = [sp.factor_terms(sp.together(a)) for a in m.args]
    common = functools.reduce(_gcd, args)
    if common == 1 or not common.is_positive:
        # gcd gives up on arguments holding exp or max; a symbol's power that multiplies
        # every argument (such as 1/n_chips) still comes out
        common = _common_symbol_powers(args)
        if common == 1:
            return m
        return common * m.func(*[a / common for a in args])
    return common * m.func(*[sp.cancel(a / common) for a in args])


def _gcd(f: sp.Expr, g: sp.Expr) -> sp.Expr:
    """``sp.gcd(f, g)``, found sooner when it is 1: sympy's dense polynomials take about a second
    to prove that two arguments of cost_per_token's max (polynomials in two dozen symbols) share
    no factor, its sparse ones a few milliseconds. Over the integers or rationals the gcd is
    unique, so when the sparse gcd of the very polynomials sp.gcd builds is 1, sp.gcd's is too;
    any other case is sp.gcd's own answer.

    >>> a, b, c = sp.symbols("a b c", positive=True)
    >>> _gcd(a * b + c, a * c), _gcd(a * b + a * c, 2 * a**2)
    (1, a)
    """
    try:
        (F, G), opt = parallel_poly_from_expr((f, g))
        algebraic = [x.is_algebraic and x.is_irrational for x in (f, g)]
        if opt.domain in (ZZ, QQ) and not all(algebraic):  # sp.gcd's own special case
            R = ring(opt.gens, opt.domain)[0]
            if R.from_dict(F.rep.to_dict()).gcd(R.from_dict(G.rep.to_dict())) == R.one:
                return sp.Integer(1)
    except Exception:  # noqa: BLE001 - whatever fails here, sp.gcd decides (and raises)
        pass
    return sp.gcd(f, g)


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


_LATEX: dict[str, object] = {}  # what to_latex reads of the notation and the catalogue, by version


def latex_names() -> dict[sp.Symbol, str]:
    """Each declared symbol's LaTeX, by sympy symbol (a new dict each time)."""
    return dict(_latex_cached("names", _names))


def _names() -> dict[sp.Symbol, str]:
    return {s.sym: s.latex for s in SYMBOLS.values()}


def _latex_cached(what: str, make):
    if _LATEX.get("version") != version():
        _LATEX.clear()
        _LATEX["version"] = version()
    if what not in _LATEX:
        _LATEX[what] = make()
    return _LATEX[what]


def shown(expr):
    """``expr`` with every registered equation's ``display`` pairs applied: subexpressions
    computed in a robust form shown in the notation's simpler one (the chance that a batch skips
    an expert as (1 - k/E_r)^B, not e^{B log(1 - k/max(1, E_r))})."""
    pairs = _latex_cached(
        "pairs", lambda: {c: d for eq in CATALOGUE.values() for c, d, _ in eq.display}
    )
    return expr.xreplace(pairs) if pairs else expr


def _written_sums() -> frozenset:
    """The sums of every shown form and written right side, printed in their written order."""
    forms = [d for eq in CATALOGUE.values() for _, d, _ in eq.display]
    forms += [eq.written for eq in CATALOGUE.values() if eq.written is not None]
    written = {a for d in forms for a in sp.preorder_traversal(d)}
    return frozenset(a for a in written if isinstance(a, sp.Add))


class _Printer(LatexPrinter):
    """sympy's LaTeX, except that the sums of a shown form keep their written order
    (``1 - k/E_r``, where sympy would print ``-k/E_r + 1``)."""

    def __init__(self, settings, written):
        super().__init__(settings)
        self.written = written

    def _print_Add(self, expr, order=None):
        return super()._print_Add(expr, "none" if expr in self.written else order)


def to_latex(expr) -> str:
    """LaTeX of a sympy expression or relation, with every symbol's declared LaTeX, in the
    form the notation shows (:func:`shown`)."""
    from derivations import stored  # printed by an earlier build: not printed again

    def printed() -> str:
        written = _latex_cached("written", _written_sums)
        settings = {"symbol_names": _latex_cached("names", _names), "mul_symbol": None}
        return _Printer(settings, written).doprint(shown(expr))

    return stored.latex("shown", expr, printed)


# -- display forms: an equation as a person writes it -------------------------------------------


def unit_constants() -> dict[sp.Symbol, sp.Integer]:
    """The constants that carry only a unit, each set to 1: u (one token per sequence per step),
    ν (one vector per token), σ (one sequence per token), D₀ (one token). They keep the algebra's
    units honest; a displayed formula leaves them out."""
    return _latex_cached(
        "unit constants",
        lambda: {
            c.sym: sp.Integer(1)
            for c in SYMBOLS.values()
            if isinstance(c, Constant) and c.value is not None and c.value.magnitude == 1
        },
    )


def _minus_sum(expr: sp.Expr) -> sp.Expr:
    """``-(x - 1) y`` as ``(1 - x) y``: a product whose sign a sum can absorb."""
    if not isinstance(expr, sp.Mul) or not expr.could_extract_minus_sign():
        return expr
    for f in expr.args:
        if isinstance(f, sp.Add) and (-f).as_coeff_Add()[0] > 0:
            rest = sp.Mul.make_args(-sp.Mul(*(a for a in expr.args if a is not f)))
            return sp.Mul(*rest, sp.Add(*(-f).args, evaluate=False), evaluate=False)
    return expr


def readable(expr: sp.Expr) -> sp.Expr:
    """``expr`` as a person writes it: the notation's shown forms (:func:`shown`), the unit
    constants set to 1, and a factored form where it is shorter ((P - 1)(1 - β)/β).

    >>> import sympy as sp
    >>> a, b, c = sp.symbols("a b c", positive=True)
    >>> readable(a * b + a * c), readable(a + b)
    (a*(b + c), a + b)
    """
    expr = shown(expr).xreplace(unit_constants())
    if not expr.has(sp.Max, sp.Min, sp.Piecewise):
        factored = _minus_sum(sp.factor(expr))
        if sp.count_ops(factored) < sp.count_ops(expr):
            expr = factored
    return expr


class _ReadablePrinter(_Printer):
    """The notation's LaTeX with each sum's positive terms first (``1 - s (1 - φ)``,
    ``n_layers - n_dense``), as a person writes them."""

    def _print_Add(self, expr, order=None):
        if expr in self.written:
            return super()._print_Add(expr, "none")
        terms = list(expr.as_ordered_terms())
        ordered = [t for t in terms if not t.could_extract_minus_sign()]
        ordered += [t for t in terms if t.could_extract_minus_sign()]
        return super()._print_Add(sp.Add(*ordered, evaluate=False), "none")


def to_display_latex(expr) -> str:
    """LaTeX of ``expr`` in its display form (:func:`readable`, :class:`_ReadablePrinter`)."""
    from derivations import stored  # printed by an earlier build: not printed again

    def printed() -> str:
        written = _latex_cached("written", _written_sums)
        settings = {"symbol_names": _latex_cached("names", _names), "mul_symbol": None}
        return _ReadablePrinter(settings, written).doprint(expr)

    return stored.latex("display", expr, printed)


def _bare(latex: str) -> str:
    """A left-hand side without the brackets its name wears in prose: ``D_pre / D_RL``."""
    if latex.startswith(r"\left(") and latex.endswith(r"\right)"):
        return latex[len(r"\left(") : -len(r"\right)")].strip()
    return latex


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
    # a derived equation (derivations.algebra): inputs put in terms of other symbols, as
    # (input name, expression) pairs (``batch_size`` -> the crossover batch), applied wherever an
    # evaluation reads that input; inputs its simplification cancelled (accepted, unused); and
    # the readable start of its id
    replaced: tuple[tuple[str, sp.Expr], ...] = ()
    cancelled: tuple[str, ...] = ()
    stem: str = ""
    # (computed, shown, where) triples: a subexpression the equation computes in a robust form,
    # the simpler form LaTeX shows instead, and the substitutions under which they are equal
    # (what an assumption says, such as max(1, E_r) = E_r for an MoE); check() verifies each
    display: tuple[tuple[sp.Expr, sp.Expr, tuple], ...] = ()
    # Python that rebuilds an equation made from the catalogue ('get("x").solve_for("y")'); a
    # notebook replays it. Empty for a registered equation: get(id) finds it.
    recipe: str = ""
    # the right side as a person writes it, when :func:`readable` does not find that form
    # itself; check() proves it equal to the right side with the unit constants set to 1
    written: sp.Expr | None = None
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
        would bring this equation's own output back in. An input a derived equation replaced
        (``replaced``) is put in terms of its replacement wherever an intermediate brings it in.
        """
        # the same expansion is asked for by the compiled code, the page's expanded form and
        # the stored facts: worked out once per state of the notation and the catalogue
        key = ("expanded", keep, version())
        if key not in self._compiled:
            self._compiled[key] = self._expand(keep)
        return self._compiled[key]

    def _expand(self, keep: frozenset[str]) -> sp.Expr:
        expr = self.rhs
        seen = {self.lhs.name, *keep}
        replaced = dict(self.replaced)

        def inner(name: str) -> sp.Expr | None:
            if name in replaced:
                return replaced[name]
            eq = defining(name)
            return eq.rhs if eq is not None and self.lhs.sym not in eq.rhs.free_symbols else None

        while True:
            subs = {
                s: rhs
                for s in expr.free_symbols
                if s.name not in seen and (rhs := inner(s.name)) is not None
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

    @property
    def display_expr(self) -> sp.Expr:
        """The right side as a person writes it: no unit constants, factored where shorter."""
        if "display" not in self._compiled:
            from derivations import stored  # found by an earlier build: not factored again

            self._compiled["display"] = (
                self.written
                if self.written is not None
                else stored.display_form(self, lambda: readable(self.rhs))
            )
        return self._compiled["display"]

    def display_latex(self) -> str:
        """``lhs = rhs`` in LaTeX as a person writes it (the chapters' displayed math); the unit
        constants u, ν, σ and D₀ are left out, sums put their positive terms first.

        >>> from derivations import get
        >>> print(get("expert_read_fraction").display_latex())
        \\phi_{B} = 1 - \\left(1 - \\frac{k}{E_{r}}\\right)^{B}
        """
        return f"{_bare(self.lhs.latex)} = {to_display_latex(self.display_expr)}"

    def _repr_latex_(self) -> str:
        """The equation as display math (Jupyter shows it when it does not take Markdown)."""
        return f"$${self.latex()}$$"

    def _repr_markdown_(self) -> str:
        """The equation as Jupyter shows it: its title, display math, summary, a table of its
        symbols with their units, its assumptions and its source.

        >>> from derivations import get
        >>> md = get("hbm_drain_time")._repr_markdown_()
        >>> print(md.split(chr(10))[0])
        **HBM drain time** (`hbm_drain_time`)
        >>> "| $W$ | `mem_bandwidth` | TB/s |" in md and "**Source:**" in md
        True
        """
        lines = [f"**{self.title}** (`{self.id}`)", "", f"$${self.latex()}$$", ""]
        if self.summary:
            lines += [self.summary, ""]
        lines += ["| symbol | name | unit | meaning |", "|---|---|---|---|"]
        for s in (self.lhs, *self.inputs):
            lines.append(
                f"| ${s.latex}$ | `{s.name}` | {_cell(unit(s.display_unit)) or '1'} "
                f"| {_cell(s.meaning)} |"
            )
        lines.append("")
        if self.assumptions:
            lines += ["**Assumptions:** " + "; ".join(self.assumptions) + ".", ""]
        lines.append(f"**Source:** {self.source}.")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Equation {self.id}: {self.lhs.name} = {self.rhs}>"

    def check(self) -> None:
        """Verify every derivation step with sympy; raises DerivationError on a wrong step."""
        if self.derivation is not None:
            self.derivation.check(self)
        from derivations.derivation import DerivationError, same

        for computed, display, where in self.display:
            # powers compared as exponentials: (1 - x)^B is e^{B log(1 - x)}
            want = computed.subs(dict(where)).rewrite(sp.exp)
            if not self.rhs.has(computed) or not same(display.rewrite(sp.exp), want):
                raise DerivationError(
                    f"equation {self.id!r}: the form shown, {display}, is not {computed} of its "
                    "right side"
                )
        self.check_display()

    def check_display(self) -> None:
        """Prove the display form equal to the right side with the unit constants set to 1 (and
        each shown subexpression equal to what it shows, as :meth:`check` proves)."""
        from derivations import stored  # proved by an earlier build: not proved again
        from derivations.derivation import DerivationError, same

        def prove() -> None:
            want = shown(self.rhs).xreplace(unit_constants())
            if self.display_expr == want:  # most display forms: nothing to rewrite or prove
                return
            if not same(self.display_expr.rewrite(sp.exp), want.rewrite(sp.exp)):
                raise DerivationError(
                    f"equation {self.id!r}: the display form {self.display_expr} is not its "
                    f"right side {want} with the unit constants set to 1"
                )

        stored.display_proved(self, prove)

    # -- evaluation ---------------------------------------------------------------------------

    def arguments(self, keep: frozenset[str] = frozenset()) -> tuple[Symbol, ...]:
        """The symbols the compiled function takes, in order (see :meth:`compiled`)."""
        key = ("args", keep)
        if key not in self._compiled:
            from derivations import stored  # compiled by an earlier build: no sympy needed

            args = stored.arguments(self, keep)
            if args is None:
                args = self._fused(keep)[1]
                stored.save_arguments(self, keep, args)
            self._compiled[key] = args
        return self._compiled[key]

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
            from derivations import stored

            if (found := stored.load(self, keep, arrays)) is not None:
                fn, source, names, args = found
                self._compiled[key] = fn
                self._compiled[("source", keep, arrays)] = (source, names)
                return fn
            expr, args = self._fused(keep)
            last = {
                s.sym: sp.Symbol(f"zz_{s.name}", positive=True) for s in args if s.name in arrays
            }
            params = [last.get(s.sym, s.sym) for s in args]
            cse = _hoisting_cse(frozenset(last.values())) if last else True
            # docstring_limit=-1: no docstring (sympy would print the whole expression into it)
            fn = sp.lambdify(
                params, expr.xreplace(last), modules=_NUMPY, cse=cse, docstring_limit=-1
            )
            self._compiled[key] = fn
            self._compiled[("source", keep, arrays)] = (inspect.getsource(fn), global_names(fn))
            stored.save(self, keep, arrays, *self._compiled[("source", keep, arrays)], args)
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
            try:
                self._compiled[key] = scalar_function(source) if pure else None
            except NotData:  # more than arithmetic: numpy evaluates it
                self._compiled[key] = None
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
            from derivations import stored  # found by an earlier build: no sympy needed

            self._compiled["evaluable"] = stored.evaluable(self)
        return self._compiled["evaluable"]

    @_recorded
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
        from derivations import inputs
        from units import reads
        from units.presets import load

        choices = dict(hardware=hardware, model=model, precision=precision, price=price)
        choices.update(
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            compute_precision=compute_precision,
        )
        presets = presets or load()
        key = inputs.evaluation_key(self, presets, dict(choices, api=api, tier=tier, fit=fit),
                                    overrides, detailed=True)  # fmt: skip
        if key is not None and (hit := inputs.recall_inputs(key)) is not None:
            return Result(self, *hit)  # evaluated before on the same inputs: the same result
        with reads.recording(quiet=True) as read:
            resolver = self.resolver(
                presets=presets, api=api, tier=tier, fit=fit, **choices, **overrides
            )
            value = convert(self.checked(resolver.value_of(self)), self.lhs.display_unit)
            resolver.record_intermediates()
        if key is not None:
            inputs.remember_inputs(key, value, resolver.used, read)
        return Result(self, value, dict(resolver.used))

    @_recorded
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
        from derivations import inputs
        from units import reads
        from units.presets import load

        choices = dict(hardware=hardware, model=model, precision=precision, price=price)
        choices.update(
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            compute_precision=compute_precision,
        )
        presets = presets or load()
        key = inputs.evaluation_key(self, presets, dict(choices, api=api, tier=tier, fit=fit),
                                    overrides)  # fmt: skip
        if key is not None and (value := inputs.recall_value(key)) is not None:
            return value  # evaluated before on the same inputs: the same value
        with reads.recording(quiet=True) as read:
            resolver = self.resolver(
                presets=presets, api=api, tier=tier, fit=fit, **choices, **overrides
            )
            value = convert(self.checked(resolver.value_of(self)), self.lhs.display_unit)
        if key is not None:
            inputs.remember_value(key, value, read)
        return value

    def checked(self, value: pint.Quantity) -> pint.Quantity:
        """``value`` (this equation's result in base units) if every element is finite and
        positive; otherwise a ChalkboardError saying so (a solve: that no positive solution
        exists for these inputs)."""
        if "positive" not in self._compiled:  # a fraction such as 1 - a/b may be exactly 0
            from derivations import stored  # found by an earlier build: no sympy needed

            self._compiled["positive"] = stored.positive(self)
        m = value.magnitude
        if type(m) is float and (0 < m < np.inf or (m == 0 and not self._compiled["positive"])):
            return value  # one finite number, in range (NaN fails both tests)
        mags = np.asarray(m, dtype=float)
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
        """Evaluate over an array of values of one input (compiled, vectorised): numbers in its
        display unit, or a Quantity such as :func:`spaced` gives."""
        sym = lookup_symbol(over)
        if isinstance(values, pint.Quantity):
            if values.dimensionality != sym.dimensionality:
                raise ChalkboardError(
                    f"sweep over {over}: values are {values.dimensionality or 'dimensionless'}, "
                    f"expected {sym.dimension}"
                )
            values = values.to(sym.display_unit).magnitude
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
        from derivations import stored  # solved by an earlier build: not solved again

        cannot = f"cannot solve {self.id!r} for {name!r}"
        solved = stored.solution(relation, target, lambda: _solved(relation, rhs, target, cannot))
        derivation = Derivation(
            given(self.lhs.sym, rhs, f"the equation {self.id}"),
            solve(target.sym, solved, f"solve for {name}"),
        )
        return Equation(
            id=f"{self.id}_for_{name}",
            title=f"{self.title}, solved for {target.meaning}",
            lhs=target,
            rhs=solved,
            chapter=self.chapter,
            source=self.source,
            assumptions=self.assumptions,
            derivation=derivation,
            summary=f"{self.id} rearranged to give {name}.",
            solved_from=self.lhs.name,
            recipe=(self.recipe or f'get("{self.id}")') + f'.solve_for("{target.name}")',
        )


def _solved(relation: sp.Eq, rhs: sp.Expr, target: Symbol, cannot: str) -> sp.Expr:
    """The one positive solution of ``relation`` (``output = rhs``) for ``target``; otherwise
    ChalkboardError, ``cannot`` and why: none, more than one, or not found in time."""
    for power in rhs.atoms(sp.Pow):  # sympy would expand a polynomial of that degree
        e = power.exp
        if (
            target.sym in power.base.free_symbols
            and e.is_Rational
            and max(abs(e.p), abs(e.q)) > MAX_SOLVE_EXPONENT
        ):
            raise ChalkboardError(
                f"{cannot}: the power {power} is too large to solve symbolically "
                f"(exponents up to {MAX_SOLVE_EXPONENT})"
            )
    try:
        with _time_limit(
            MAX_SOLVE_SECONDS,
            f"{cannot}: sympy took longer than "
            f"{MAX_SOLVE_SECONDS} s on it (too large to solve symbolically)",
        ):
            solutions = sp.solve(relation, target.sym, dict=False)
    except NotImplementedError:
        solutions = []
    solutions = [s for s in solutions if s.is_positive is not False and s.is_real is not False]
    solutions = [_dimension_grouped(s) for s in solutions]
    if len(solutions) != 1:
        raise ChalkboardError(f"{cannot}: no unique positive solution")
    return solutions[0]


MAX_SOLVE_EXPONENT = 1000  # a power of the unknown beyond this is not solved symbolically
MAX_SOLVE_SECONDS = 30  # sympy's solve is stopped after this long (the CLI's main thread)


@contextlib.contextmanager
def _time_limit(seconds: float, message: str):
    """ChalkboardError(message) when the block runs longer than ``seconds`` (a real-time timer:
    only in the main thread, and only when no other timer is set; elsewhere no limit)."""
    import signal
    import threading

    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getitimer(signal.ITIMER_REAL)[0]
    ):
        yield
        return

    def stop(signum, frame):
        raise ChalkboardError(message)

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------------------------
# Catalogue

CATALOGUE: dict[str, Equation] = _Table()
_BY_OUTPUT: dict[str, Equation] = _Table()


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
