"""The project's single pint registry and the safe parsing of quantities typed by people.

>>> parse_quantity("3.35 TB/s").to("GB/s")
<Quantity(3350.0, 'gigabyte / second')>
>>> parse_quantity("80 GB", expect="byte/s")
Traceback (most recent call last):
...
units.errors.ChalkboardError: '80 GB' is [information], expected ... (like 80 B/s)
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import numpy as np
import pint
from pint.util import UnitsContainer

from units.errors import ChalkboardError

DEFINITIONS = Path(__file__).with_name("definitions.txt")


_FAST_MAGNITUDES = (float, int, np.float64, np.ndarray)


class _Quantity(pint.UnitRegistry.Quantity):
    """pint's Quantity, built and converted directly in the cases the book spends its time in:
    a float, int or array magnitude with pint's own units container (what pint's constructor
    does there, after choosing among a dozen cases), and ``to`` a unit of the same registry
    with no context (the factor of each pair of units cached, as :func:`convert` does). Every
    other case, and the quantities of any other registry, are pint's own; ``_DIRECT`` turns the
    direct paths off where this pint would build something else (its ``force_ndarray``
    options, a change of its internals)."""

    def __new__(cls, value, units=None):
        direct = type(units) is UnitsContainer and type(value) in _FAST_MAGNITUDES
        if direct and _DIRECT and cls._REGISTRY is ureg:
            q = object.__new__(cls)
            q._magnitude = value
            q._units = units
            return q
        return super().__new__(cls, value, units)

    def to(self, other=None, *contexts, **ctx_kwargs):
        if not contexts and not ctx_kwargs and _DIRECT and self._REGISTRY is ureg:
            converted = _converted(self, other)
            if converted is not None:
                return converted
        return super().to(other, *contexts, **ctx_kwargs)

    def _get_non_multiplicative_units(self) -> list[str]:
        units = self._units
        if self._REGISTRY is not ureg:
            return super()._get_non_multiplicative_units()
        found = _OFFSET_UNITS.get(units)
        if found is None:
            found = _OFFSET_UNITS[units] = tuple(super()._get_non_multiplicative_units())
        return list(found)


_Quantity.__name__ = _Quantity.__qualname__ = "Quantity"  # the name pint's repr and errors show
_DIRECT = False  # until _pint_builds_the_same says otherwise (below)
_OFFSET_UNITS: dict = {}  # the offset units (degC) among each units container's: almost always none
_CONTAINERS: dict = {}  # the units container of each unit text ``to`` was given


class _Registry(pint.UnitRegistry):
    """pint's registry, reading back every unit expression it parsed before from pint's own
    cache. pint 0.24 stores compound expressions such as ``"GB/s"`` there but reads back only
    a unit's bare name (its guard for units defined under a context asks the whole text to be
    one unit's name; the book defines none under a context), so a build parsed the same few
    texts tens of thousands of times. A new definition empties that cache (pint keeps it).

    >>> ureg.parse_units_as_container("GB/s") is ureg.parse_units_as_container("GB/s")
    True
    """

    def _parse_units_as_container(self, input_string, as_delta=True, case_sensitive=True):
        if as_delta and case_sensitive:
            found = self._cache.parse_unit.get(input_string)
            if found is not None:
                return found
        return super()._parse_units_as_container(input_string, as_delta, case_sensitive)

    Quantity = _Quantity

    def define(self, definition):
        super().define(definition)
        self._cache.parse_unit.clear()  # a new name may change how a stored text reads
        _CONTAINERS.clear()
        _OFFSET_UNITS.clear()


ureg = _Registry(str(DEFINITIONS), autoconvert_offset_to_baseunit=False)
ureg.formatter.default_format = "~P"
Q_ = ureg.Quantity
Quantity = ureg.Quantity
Unit = ureg.Unit

_NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d_,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")
_UNIT_TEXT = re.compile(r"^[A-Za-zµ_ /*^·0-9().\-]*$")
_POWER = re.compile(r"(\*\*|\^)\s*\(?\s*([-+]?[\d.]*)")

# Limits on text typed by people, checked before pint sees it (pint hangs on '10**10**10').
MAX_UNIT_CHARS = 100
MAX_EXPONENT = 12
MAX_NUMBER_CHARS = 400

# The dimensions of counts (tokens and sequences; units/definitions.txt): a bare number is read
# in a unit made only of these and of dimensionless counts (chips, parameters, layers, ...).
COUNT_DIMENSIONS: frozenset[str] = frozenset({"[token]", "[sequence]"})


def _plain_quantity(magnitude, units: UnitsContainer) -> pint.Quantity:
    """``Q_(magnitude, units)`` for a float, int or array magnitude and pint's UnitsContainer:
    what pint's constructor does in that case (it spends most of its time choosing the case)."""
    q = object.__new__(Quantity)
    q._magnitude = magnitude
    q._units = units
    return q


def _pint_builds_the_same() -> bool:
    """True when this pint's Quantity holds exactly what _plain_quantity sets (else Q_ is used,
    and _Quantity's direct paths are off)."""
    units = ureg.parse_units("byte/s")._units
    try:
        made = _plain_quantity(2.5, units)
        want = pint.UnitRegistry.Quantity.__new__(Quantity, 2.5, units)  # pint's own path
        same = vars(made) == vars(want) and type(made) is type(want)
        return same and not (ureg.force_ndarray or ureg.force_ndarray_like)
    except Exception:
        return False


_DIRECT = _pint_builds_the_same()
new_quantity = _plain_quantity if _DIRECT else Q_

# Conversion factors by (source, target) units and base units by source units, as pint itself
# computes them: an evaluation converts the same few dozen pairs thousands of times.
_FACTORS: dict = {}
_BASES: dict = {}


def _converted(q: pint.Quantity, other) -> pint.Quantity | None:
    """``q.to(other)`` when it is a plain multiplication by a cached factor (the same value,
    magnitude type and units as pint gives), else None: pint converts (and raises its errors)."""
    if type(q._magnitude) not in _FAST_MAGNITUDES or ureg._active_ctx:
        return None
    kind = type(other)
    if kind is str:
        dst = _CONTAINERS.get(other)
        if dst is None:
            try:
                dst = pint.util.to_units_container(other, ureg)
            except Exception:
                return None  # pint raises its own error
            if len(_CONTAINERS) >= 4096:
                _CONTAINERS.clear()
            _CONTAINERS[other] = dst
    elif kind is UnitsContainer:
        dst = other
    elif isinstance(other, pint.Unit) and other._REGISTRY is ureg:
        dst = other._units
    else:
        return None
    src = q._units
    magnitude = q._magnitude
    if src != dst:  # else pint keeps the magnitude itself
        factor = _FACTORS.get((src, dst)) or _factor(src, dst)
        if factor is None:
            return None
        magnitude = magnitude * factor
    out = object.__new__(type(q))
    out._magnitude = magnitude
    out._units = dst
    return out


def convert(q: pint.Quantity, units: pint.Unit) -> pint.Quantity:
    """``q.to(units)`` for a Unit (or pint's UnitsContainer), the same value, magnitude type
    and units as pint gives, with the conversion factor of each pair of units cached (pint's
    ``to`` spends ~20 us per call re-deriving it).

    >>> convert(Q_(3.35, "TB/s"), parse_unit("GB/s"))
    <Quantity(3350.0, 'gigabyte / second')>
    >>> convert(Q_(2, "minute"), parse_unit("s"))  # an int times pint's int factor stays int
    <Quantity(120, 'second')>
    """
    dst = units._units if isinstance(units, pint.Unit) else units
    if not isinstance(dst, UnitsContainer) or q._REGISTRY is not ureg or ureg._active_ctx:
        return q.to(units)
    src, magnitude = q._units, q._magnitude
    if src == dst:  # pint returns the magnitude itself
        return new_quantity(magnitude, dst)
    factor = _FACTORS.get((src, dst)) or _factor(src, dst)
    if factor is None or type(magnitude) not in _FAST_MAGNITUDES:
        return q.to(units)  # pint's own path: its errors, Decimal, offset units
    return new_quantity(magnitude * factor, dst)  # what pint computes: value * factor


def _factor(src, dst):
    """pint's factor from ``src`` to ``dst`` (cached), or None when there is none (different
    dimensions, offset units) and pint's own conversion must run."""
    key = (src, dst)
    if key not in _FACTORS:
        try:
            factor = ureg.convert(1, src, dst)  # 1 * factor: the factor itself, type and all
            zero = ureg.convert(0, src, dst)
        except Exception:
            return None  # not cached: pint raises its own error again
        if zero != 0 or not isinstance(factor, int | float):
            return None
        if len(_FACTORS) >= 4096:
            _FACTORS.clear()
        _FACTORS[key] = factor
    return _FACTORS[key]


def to_base(q: pint.Quantity) -> pint.Quantity:
    """``q.to_base_units()``, with the base units of each unit cached.

    >>> to_base(Q_(80, "GB"))
    <Quantity(8e+10, 'byte')>
    """
    src = q._units
    key = (src, ureg.default_system)
    base = _BASES.get(key)
    if base is None:
        if q._REGISTRY is not ureg:
            return q.to_base_units()
        base = Q_(1, src).to_base_units()._units
        if len(_BASES) >= 4096:
            _BASES.clear()
        _BASES[key] = base
    return convert(q, base)


def is_count(unit) -> bool:
    """True for a dimensionless unit or a count (a bare number may be given in it).

    >>> is_count("sequence"), is_count("byte/s")
    (True, False)
    """
    if isinstance(unit, str):
        unit = parse_unit(unit)
    dims = Q_(1, unit).dimensionality
    return all(d in COUNT_DIMENSIONS for d in dims)


def one_line(text) -> str:
    """Collapse line breaks (from file names, user text, exception messages) into spaces.

    >>> one_line("bad\\nfile.toml: oops")
    'bad file.toml: oops'
    """
    return re.sub(r"\s*[\r\n\v\f\x85\u2028\u2029]+\s*", " ", str(text)).strip()


def parse_unit(text: str) -> pint.Unit:
    """Parse a unit such as ``"TB/s"`` or ``"USD/Mtoken"``; unknown units raise ChalkboardError.

    >>> parse_unit("ms")
    <Unit('millisecond')>
    """
    if type(text) is str:
        return _parse_unit(text)  # cached: a Unit is immutable; an error is raised every time
    return _parse_unit.__wrapped__(text)


@functools.lru_cache(maxsize=4096)
def _parse_unit(text: str) -> pint.Unit:
    text = text.strip().replace("·", "*")
    if not text:
        return ureg.dimensionless
    if len(text) > MAX_UNIT_CHARS:
        raise ChalkboardError(f"unit {text[:20]!r}... is longer than {MAX_UNIT_CHARS} characters")
    if not _UNIT_TEXT.match(text):
        raise ChalkboardError(f"unit {text!r} has characters a unit cannot contain")
    for match in _POWER.finditer(text):
        rest = text[match.end() :].lstrip(" )")
        try:
            exponent = float(match.group(2))
        except ValueError:
            raise ChalkboardError(f"unit {text!r}: an exponent must be a number") from None
        if abs(exponent) > MAX_EXPONENT or rest.startswith(("**", "^")):
            raise ChalkboardError(
                f"unit {text!r}: exponents are single numbers from -{MAX_EXPONENT} to "
                f"{MAX_EXPONENT}"
            )
    try:
        return ureg.parse_units(text)
    except (pint.errors.UndefinedUnitError, pint.errors.DefinitionSyntaxError) as err:
        raise ChalkboardError(f"unknown unit in {text!r}: {err}") from None
    except Exception as err:  # pint raises assorted errors on malformed text
        raise ChalkboardError(f"cannot read unit {text!r}: {err}") from None


_SHORT_COUNTS = {"tok": "token", "seq": "sequence", "param": "parameter", "val": "value"}
_SHORT_COUNT = re.compile(r"(?<![A-Za-z])([kMGTP]?)(tok|seq|param|val)(?![A-Za-z])")


def spelled(unit: pint.Unit) -> str:
    """A unit in pint's short notation with its counts spelled out, as people type them.

    >>> spelled(parse_unit("token/sequence")), spelled(parse_unit("USD/Mtoken/s"))
    ('token/sequence', 'USD/Mtoken/s')
    """
    return _SHORT_COUNT.sub(lambda m: m.group(1) + _SHORT_COUNTS[m.group(2)], f"{unit:~P}")


def dimension_of(unit: str | pint.Unit) -> str:
    """The dimension of a unit as text, e.g. ``'[information] / [time]'``."""
    if isinstance(unit, str):
        unit = parse_unit(unit)
    dims = Q_(1, unit).dimensionality
    return str(dims) if dims else "dimensionless"


def check_positive(q: pint.Quantity, what: str, zero: bool = False) -> pint.Quantity:
    """Reject non-finite and non-positive magnitudes (or negative ones, with ``zero``), naming
    ``what``; the value in base units must be finite and non-zero too (``1e308 TB`` overflows,
    ``5e-324 USD/byte/hour`` underflows)."""
    m = q.magnitude
    if not isinstance(m, int | float) or not math.isfinite(m):
        raise ChalkboardError(f"{what}: value must be a finite number, got {m!r}")
    if zero and m == 0:
        return q
    if m <= 0:
        least = "zero or positive" if zero else "positive"
        raise ChalkboardError(f"{what}: value must be {least}, got {q:~P}")
    try:
        base = float(to_base(q).magnitude)
    except (OverflowError, ZeroDivisionError):
        base = math.inf
    if not math.isfinite(base) or base == 0:
        raise ChalkboardError(f"{what}: {q:~P} is out of range (too large or too small)")
    return q


# The unit a hint shows a bare number of each dimension in, when no unit is named for it.
HINT_UNITS = {
    "[information]": "GB",
    "[information] / [time]": "TB/s",
    "[compute] / [time]": "TFLOP/s",
    "[time]": "ms",
}


def _hint(number: str, want: pint.Unit, shown: pint.Unit) -> str:
    """How a bare ``number`` could be written with a unit: ``'3.35 TB/s'`` for 3.35, but
    ``'989 TFLOP/s (989e12 FLOP/s)'`` for 989e12 where FLOP/s are expected (a big number reads
    as a size in the plain unit, so the hint converts it instead of adding a prefix)."""
    from units.display import number as spoken
    from units.display import unit as words

    text = spelled(shown)
    base = Q_(1, want).to_base_units().units
    try:
        value = float(number)
        converted = Q_(value, base).to(shown).magnitude
    except (ValueError, OverflowError):
        return f"{number} {text}"
    if value >= 1e4 and 0.01 <= converted < 1e5:
        return f"{spoken(converted)} {words(shown)} ({number} {spelled(base)})"
    return f"{number} {text}"


def bare_unit(number, expect, example, label: str, scaled: bool = False) -> pint.Unit:
    """The unit a bare number is read in: the expected unit, when it is a count whose
    display unit is the same (``batch_size=64`` is 64 sequences) or when the number carries its
    own scale word (``training_tokens=15T`` is 15 trillion tokens, though they are shown in
    Ttoken); anything else needs a unit, and the error says how it could be written."""
    if expect is None:
        return ureg.dimensionless
    want = expect if isinstance(expect, pint.Unit) else parse_unit(str(expect))
    if example is None:
        example = HINT_UNITS.get(dimension_of(want), want)
    shown = example if isinstance(example, pint.Unit) else parse_unit(str(example))
    if is_count(want) and (scaled or Q_(1, shown).to(want).magnitude == 1):
        return want
    raise ChalkboardError(f"{label}={number} needs a unit, like {_hint(number, want, shown)}")


def _unit_named(name: str) -> pint.Unit:
    """The registry's unit for one name as a person typed it: exact, else with its case
    relaxed (``MTok``, ``Tokens``, ``GBPS``; a ``B`` keeps its case: bytes are not bits)."""
    try:
        return parse_unit(name)
    except ChalkboardError:
        pass
    if len(name) >= 3:
        keep_b = "".join(c if c == "B" else c.lower() for c in name)
        for candidate in (name[0] + keep_b[1:], keep_b):
            try:
                return parse_unit(candidate)
            except ChalkboardError:
                continue
    for candidate in (name.upper(), name.capitalize(), name.lower()):
        try:
            parse_unit(candidate)
        except ChalkboardError:
            continue
        raise ChalkboardError(f"unknown unit '{name}' (did you mean '{candidate}'?)")
    raise ChalkboardError(f"unknown unit '{name}'")


def _is_noun(name: str) -> bool:
    """Whether "B" before the unit ``name`` means billions: a count, FLOP or money (never a
    time or an amount of data, where B is a byte)."""
    try:
        dims = Q_(1, _unit_named(name)).dimensionality
    except ChalkboardError:
        return False
    return not dims.get("[time]") and not dims.get("[information]")


def read_quantity(text: str) -> pint.Quantity:
    """A quantity typed by a person, read by :func:`units.reading.read` with the registry's
    units (scale words folded into the magnitude).

    >>> read_quantity("671 B parameters"), read_quantity("3.35 TBps").to("GB/s")
    (<Quantity(6.71e+11, 'parameter')>, <Quantity(3350.0, 'gigabyte / second')>)
    """
    from units.reading import read

    reading = read(text, _is_noun)
    unit = ureg.dimensionless
    for name, power in reading.factors:
        unit = unit * _unit_named(name) ** power
    return Q_(reading.number, unit)


def parse_quantity(
    text,
    expect: str | pint.Unit | None = None,
    what: str | None = None,
    example: str | pint.Unit | None = None,
    zero: bool = False,
) -> pint.Quantity:
    """Turn ``"3.35 TB/s"`` (or a number, or a Quantity) into a positive, finite Quantity
    (or zero, with ``zero``).

    With ``expect``, the value must have that unit's dimension; a number of tokens is read as
    the tokens of one sequence where tokens per sequence are expected (a context length). A
    bare number is read in ``expect`` only when that is a count or dimensionless and
    ``example`` (the unit shown to people, default ``expect``) has the same scale; otherwise a
    bare number is an error naming the unit it needs. Text is read as people write it
    (:mod:`units.reading`: "671 B parameters", "2.6 × 10¹⁴ tokens", "$0.18/Mtok"), matched by
    regular expressions and pint's unit parser, never passed to ``eval`` or ``sympify``.

    >>> parse_quantity("64", expect="sequence")
    <Quantity(64.0, 'sequence')>
    >>> parse_quantity("8192 tokens", expect="token/sequence")
    <Quantity(8192.0, 'token / sequence')>
    >>> parse_quantity("3.35", expect="byte/s", what="mem_bandwidth", example="TB/s")
    Traceback (most recent call last):
    ...
    units.errors.ChalkboardError: mem_bandwidth=3.35 needs a unit, like 3.35 TB/s
    """
    label = what or repr(text)
    if isinstance(text, pint.Quantity):
        q = text
        if q._REGISTRY is not ureg:
            q = Q_(q.magnitude, str(q.units))
    elif isinstance(text, bool):
        raise ChalkboardError(f"{label}: expected a number with a unit, got {text!r}")
    elif isinstance(text, int | float):
        try:
            magnitude = float(text)
        except OverflowError:
            raise ChalkboardError(f"{label}: {str(text)[:20]}... is too large") from None
        shown = repr(text) if len(repr(text)) <= 40 else f"{magnitude:g}"
        q = Q_(magnitude, bare_unit(shown, expect, example, what or "value"))
    elif isinstance(text, str):
        q = _read_text(text, expect, what, example, label)
    else:
        raise ChalkboardError(f"{label}: expected a number with a unit, got {type(text).__name__}")
    if expect is not None:
        want = parse_unit(str(expect)) if not isinstance(expect, pint.Unit) else expect
        dims = want.dimensionality if want._REGISTRY is ureg else Q_(1, want).dimensionality
        if q.dimensionality == _TOKENS and dims == _TOKENS_PER_SEQUENCE:
            q = q / Q_(1, "sequence")  # "8192 tokens" of context: the tokens of one sequence
        if q.dimensionality != dims:
            shown = text if isinstance(text, str) else f"{q:~P}"
            prefix = f"{what}: " if what else ""
            # the example in the unit shown to people, counts spelled out ("token/sequence",
            # never pint's short "tok/seq")
            like = example.strip() if isinstance(example, str) else spelled(want)
            bytes_hint = ""
            if str(q.dimensionality) == "[information]" and "[information]" not in dims:
                bytes_hint = "; B alone means bytes: for billions write B before a count noun"
            raise ChalkboardError(
                f"{prefix}{shown!r} is {dimension_of(q.units)}, expected a quantity of "
                f"{dimension_of(want)} (like {q.magnitude:g} {like}){bytes_hint}"
            )
    return check_positive(q, label, zero)


_SCALE_WORD = re.compile(r"(?<![A-Za-z])(?:k|K|M|B|T|bn|thousand|million|billion|trillion)\b")
_TOKENS = Q_(1, "token").dimensionality
_TOKENS_PER_SEQUENCE = Q_(1, "token/sequence").dimensionality
# What typed text may hold: checked before anything else reads it.
_TYPED = re.compile(r"^[\w µμ/*^·().,+\-$¢%×⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺{}\\\u00a0\u2009\u202f\u2212]*$")


def _read_text(text: str, expect, what, example, label: str) -> pint.Quantity:
    match = _NUMBER.match(text)
    if match and not match.group(2):  # a bare number: its unit is the symbol's
        number = match.group(1)
        if len(number) > MAX_NUMBER_CHARS:
            raise ChalkboardError(f"{label}: a number of {len(number)} characters is too long")
        try:
            magnitude = float(number.replace("_", "").replace(",", ""))
        except ValueError:
            raise ChalkboardError(f"{label}: {number!r} is not a number") from None
        return Q_(magnitude, bare_unit(number, expect, example, what or "value"))
    if len(text) > MAX_NUMBER_CHARS:
        raise ChalkboardError(f"{label}: a value of {len(text)} characters is too long")
    if not _TYPED.match(text):
        raise ChalkboardError(f"{label}: {text!r} has characters a quantity cannot contain")
    try:
        q = read_quantity(text)
    except ChalkboardError as err:
        if str(err).startswith("give a number"):
            err = "expected a number followed by a unit, like '3.35 TB/s'"
        raise ChalkboardError(f"{label}: {err}") from None
    if q.unitless and expect is not None:  # "128k", "25%": a bare number, scaled
        scaled = _SCALE_WORD.search(text) is not None
        return Q_(q.magnitude, bare_unit(text.strip(), expect, example, what or "value", scaled))
    return q
