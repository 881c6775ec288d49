"""Quantities as people write them: the one reader of typed numbers and units.

The book's answer checker (``book/checker.py`` and its browser twin,
``book/assets/javascripts/answer-check.js``, which mirrors :func:`read` line by line) and the
CLI's ``--set`` (:func:`units.registry.parse_quantity`) read text with it. It turns

- numbers: ``5,356``, ``2.63e14``, ``2.63 × 10¹⁴``, ``2.63 x 10^14``, ``2.63*10^14``, ``10²⁴``,
  ``$0.18``, ``18¢``;
- scale words on counts: ``128k tokens``, ``1.152 T parameters``, ``USD per million tokens``,
  ``per M tokens``; ``B`` before a count noun is billions (``671 B parameters``), otherwise
  bytes (``128 B``);
- units: ``TB/s``, ``tokens per second per sequence``, ``token/(s*sequence)``, ``FLOP²``,
  ``%``, ``8x``; the book's words for a sequence (``per user``, ``per conversation``, ``per
  request``, ``per stream``) as ``sequence``;

into a number and a list of ``(unit name, power)`` factors. The caller looks the names up
(in the registry, or in the checker's unit table): this module knows no unit itself (it only
renames the words for a sequence), so it sits below both. It never evaluates text.

>>> r = read("1.152 T parameters")
>>> r.number, r.factors
(1152000000000.0, [('parameters', 1)])
>>> read("$0.18 per million tokens").factors
[('USD', 1), ('tokens', -1)]
>>> read("128 B").factors, read("671 B parameters", lambda name: name == "parameters").number
([('B', 1)], 671000000000.0)
>>> read("$0.60/M").factors, read("$0.60/M").per_scale, read("$0.60/M tokens").per_scale
([('USD', 1)], True, False)
>>> read("86 tok/s per user").factors, read("239").bare, read("2.16T").bare
([('tok', 1), ('s', -1), ('sequence', -1)], True, False)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from units.errors import ChalkboardError

MAX_CHARS = 200  # longer text is not an answer or a value
MAX_POWER = 12  # a unit's exponent, at most (pint hangs on '10**10**10')

# Words that scale a number ("128 k tokens", "per million tokens"). "B" counts as billions only
# before a count noun (it is bytes otherwise); see read.
SCALES = {
    "k": 1e3,
    "K": 1e3,
    "thousand": 1e3,
    "M": 1e6,
    "million": 1e6,
    "B": 1e9,
    "bn": 1e9,
    "billion": 1e9,
    "T": 1e12,
    "trillion": 1e12,
}
# The whole unit of a pure number written as a percentage or a ratio, with its factor.
RATIOS = {"%": 0.01, "percent": 0.01, "per cent": 0.01, "x": 1.0, "×": 1.0, "times": 1.0}
# Symbols read as unit names.
SYMBOLS = {"$": "USD", "¢": "cent"}
# The book's other words for one sequence being decoded ("tokens per second per user", "GB per
# conversation"), read as "sequence". Not unit aliases in the registry: a user may hold several
# sequences over a day, and a reversible network's "stream" is half an activation.
SEQUENCE_WORDS = {
    word + plural: "sequence" + plural
    for word in ("user", "conversation", "request", "stream")
    for plural in ("", "s")
}
SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
SUPERSCRIPT_DIGITS = str.maketrans(SUPERSCRIPTS + "⁻⁺", "0123456789-+")

_DIGITS = r"\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+"
_NUMBER = re.compile(r"^([-+]?)(" + _DIGITS + r")(?:[eE]([-+]?\d+))?", re.ASCII)
_POWER = r"(?:(?:\^|\*\*)\s*[({]?\s*([-+]?\d+)\s*[)}]?|([⁻⁺]?[" + SUPERSCRIPTS + r"]+))"
_TIMES_TEN = re.compile(r"^\s*(?:[x×X*·]|\\times)\s*10\s*" + _POWER, re.ASCII)
_TEN_TO = re.compile(r"^" + _POWER, re.ASCII)  # after a bare "10": 10^14, 10¹⁴
_FACTOR = re.compile(r"^([A-Za-zµ_]+)(?:\^([-+]?\d+)|([⁻⁺]?[" + SUPERSCRIPTS + r"]+))?$", re.ASCII)
_PLAIN = re.compile(r"^\d+(?:\.\d+)?$", re.ASCII)
_LEADING_NUMBER = re.compile(r"^(\d+(?:\.\d+)?)([A-Za-z][\s\S]*)$", re.ASCII)
_GROUP_SPACE = re.compile(r"(\d)[\u00a0\u2009\u202f](?=\d{3}(?!\d))", re.ASCII)
_SPACES = re.compile(r"[\u00a0\u2009\u202f]")
_PER = re.compile(r"(^|\s)per(?=\s|$)", re.ASCII)
_ABOUT = re.compile(
    r"^(?:(?:about|around|roughly|approximately|approx\.?)\s+|[~≈]\s*)", re.I | re.A
)
_SPLIT = re.compile(r"[*\s]+", re.ASCII)
WHITESPACE = " \t\n\r\f\v"  # what strip() removes here and in JavaScript


@dataclass
class Reading:
    """What :func:`read` found: the number (scale words folded in) and the unit's factors.

    ``bare_bytes`` is true when a "B" was read as bytes (not billions): a message about a
    wrong dimension can then say so. ``per_scale`` is true when a scale stood alone under the
    line ("$0.60/M", "per million"): a price said the way price lists say it, per million
    tokens. ``scaled`` is true when a scale word was folded into the number ("2.16T", "128 k"),
    ``ratio`` when the text ended in a percentage or a ratio ("25%", "8x"): a number with no
    unit and neither is *bare*, and a checker may read it in the unit the question names.
    """

    number: float
    factors: list[tuple[str, int]] = field(default_factory=list)
    bare_bytes: bool = False
    scaled: bool = False
    ratio: bool = False
    per_scale: bool = False

    @property
    def bare(self) -> bool:
        """A plain number with nothing after it ("239", "2.63e14", "8,681")."""
        return not self.factors and not self.scaled and not self.ratio


def _power(plain: str | None, superscript: str | None) -> int:
    return int(plain) if plain is not None else int(superscript.translate(SUPERSCRIPT_DIGITS))


def read(text: str, is_noun: Callable[[str], bool] | None = None) -> Reading:
    """Read ``text`` as a number followed by a unit; ``is_noun(name)`` tells whether a unit name
    is a count noun or another unit "B" may scale (parameters, tokens, FLOP, USD): then "B"
    before it means billions. Raises ChalkboardError with a short message a person can act on.

    >>> read("2.63 × 10¹⁴ tokens").number
    263000000000000.0
    >>> read("18¢").number, read("18¢").factors
    (18.0, [('cent', 1)])
    >>> read("fast")
    Traceback (most recent call last):
    ...
    units.errors.ChalkboardError: give a number followed by a unit, like 24 ms
    """
    if not isinstance(text, str):
        raise ChalkboardError("give a number followed by a unit, like 24 ms")
    if len(text) > MAX_CHARS:
        raise ChalkboardError(f"that is longer than {MAX_CHARS} characters")
    t = text.strip(WHITESPACE).replace("\u2212", "-").replace("\u03bc", "\u00b5")  # minus, Greek mu
    t = _GROUP_SPACE.sub(r"\1", t)
    t = _SPACES.sub(" ", t)
    t = _ABOUT.sub("", t)  # "about 200 GB", "~0.2 s": every answer here is about right
    currency = False
    if t.startswith("US$"):
        currency, t = True, t[3:].lstrip(WHITESPACE)
    elif t.startswith("$"):
        currency, t = True, t[1:].lstrip(WHITESPACE)
    m = _NUMBER.match(t)
    if not m:
        raise ChalkboardError("give a number followed by a unit, like 24 ms")
    sign, digits, exponent = m.group(1), m.group(2).replace(",", ""), int(m.group(3) or 0)
    t = t[m.end() :]
    ten = _TEN_TO.match(t) if digits == "10" and m.group(3) is None else None
    if ten:  # "10¹⁴ tokens": a power of ten on its own
        digits, exponent = "1", _power(ten.group(1), ten.group(2))
        t = t[ten.end() :]
    else:
        times = _TIMES_TEN.match(t)
        if times:
            exponent += _power(times.group(1), times.group(2))
            t = t[times.end() :]
    if abs(exponent) > 400:
        raise ChalkboardError("that power of ten is out of range")
    number = float(f"{sign}{digits}e{exponent}")  # one rounding, as JavaScript's parseFloat
    rest = t.strip(WHITESPACE)
    if currency:
        rest = "USD " + rest
    reading = Reading(number)
    if rest.lower() in RATIOS or rest in RATIOS:
        reading.number = number * RATIOS[rest.lower() if rest.lower() in RATIOS else rest]
        reading.ratio = True
        return reading
    _read_unit(rest, reading, is_noun or (lambda name: False))
    return reading


_CARET = re.compile(r"[ \t\n\r\f\v]*\^[ \t\n\r\f\v]*")  # WHITESPACE, as JavaScript reads it


def _words(part: str) -> list[str]:
    out = []
    for word in _SPLIT.split(part):
        lead = _LEADING_NUMBER.match(word)
        out += [lead.group(1), lead.group(2)] if lead else [word] if word else []
    return out


def _read_unit(rest: str, reading: Reading, is_noun: Callable[[str], bool]) -> None:
    if not rest:
        return
    for symbol, name in SYMBOLS.items():
        rest = rest.replace(symbol, f" {name} ")
    rest = rest.replace("·", "*").replace("**", "^")
    rest = _PER.sub(r"\1/", _CARET.sub("^", rest))  # "FLOP ** 2", as pint writes it: "FLOP^2"
    parts = rest.split("/")
    for i, part in enumerate(parts):
        sign = 1 if i == 0 else -1
        part = part.strip(WHITESPACE)
        if part.startswith("(") and part.endswith(")"):
            part = part[1:-1]
        words = _words(part)
        if not words:
            if i == 0 and len(parts) > 1:  # "/s": nothing above the line, as in "1/s"
                continue
            raise ChalkboardError("a unit is missing around '/'")
        named = len(reading.factors)
        for j, word in enumerate(words):
            if _PLAIN.match(word) and float(word) > 0:  # "per 1M tokens"
                scale = float(word)
            elif word in SCALES:
                after = _FACTOR.match(words[j + 1]) if j + 1 < len(words) else None
                if word != "B" or (after is not None and is_noun(after.group(1))):
                    scale = SCALES[word]
                else:
                    scale = None
                    reading.bare_bytes = True
            else:
                scale = None
            if scale is not None:
                reading.scaled = True
                if sign > 0:
                    reading.number = reading.number * scale
                else:
                    reading.number = reading.number / scale
                continue
            m = _FACTOR.match(word)
            if not m:
                raise ChalkboardError(f"cannot read the unit '{word}'")
            power = sign * (_power(m.group(2), m.group(3)) if m.group(2) or m.group(3) else 1)
            if abs(power) > MAX_POWER:
                raise ChalkboardError(f"the power of '{m.group(1)}' is too large")
            name = SEQUENCE_WORDS.get(m.group(1).lower(), m.group(1))
            reading.factors.append((name, power))
        if sign < 0 and len(reading.factors) == named:  # "/M": only a scale under the line
            reading.per_scale = True
