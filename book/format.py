"""How numbers and units are written on the page, on cards and in the terminal's text output.

The rules (tests/book/test_format.py checks them over every generated page, card and CLI text):
3-4 significant figures and no spurious precision; scientific notation with Unicode superscripts
for huge or tiny magnitudes ("2.63 × 10¹⁴ tokens", "10²⁵ FLOP"); counts of ten or more as whole
numbers ("295 sequences", "1 sequence"); units as a reader says them ("671 B parameters",
"bytes per token", "USD per million tokens"), never pint's short count symbols (tok, seq, param,
val, Gparam). JSON output keeps pint's machine unit strings (e.g. "USD/Mtok"): it is read by
programs, and ``parse_unit`` reads those strings back.

>>> from units import Q_
>>> number(5351.2)
'5,351'
>>> number(0.0123456)
'0.01235'
>>> number(262_980_000_000_000)
'2.63 × 10¹⁴'
>>> number(1e25), number(-0.9999999999999999)
('10²⁵', '-1')
>>> quantity(Q_(14.4, "ms"))
'14.4 ms'
>>> quantity(Q_(989.4, "TFLOP/s"))
'989.4 TFLOP/s'
>>> quantity(Q_(5356.4, "sequence")), quantity(Q_(1, "sequence")), quantity(Q_(671, "Gparam"))
('5,356 sequences', '1 sequence', '671 B parameters')
>>> quantity(Q_(1e25, "FLOP")), quantity(Q_(70_000, "byte/token")), quantity(Q_(2, "USD/Mtok"))
('10²⁵ FLOP', '70,000 bytes per token', '2 USD per million tokens')
>>> sentence("the step time"), sentence("n chips share it"), sentence("f is any function")
('The step time', 'n chips share it', 'f is any function')
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the fast CLI imports this module without pint
    import pint

SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
SCIENTIFIC_FROM = 1e6  # at and above this magnitude a number is written as a power of ten
SCIENTIFIC_BELOW = 1e-4


def superscript(n: int) -> str:
    """``'¹⁴'`` for 14."""
    return str(n).translate(SUPERSCRIPT)


def number(x: float, digits: int = 4) -> str:
    """``x`` with ``digits`` significant figures, thousands separated, no trailing zeros; a huge
    or tiny magnitude as ``'2.63 × 10¹⁴'``."""
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    x = float(f"{x:.{digits - 1}e}")  # round first: -0.9999999999999999 is -1
    exponent = math.floor(math.log10(abs(x)))
    if abs(x) >= SCIENTIFIC_FROM or abs(x) < SCIENTIFIC_BELOW:
        mantissa, power = f"{x:.{digits - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        power_text = f"10{superscript(int(power))}"
        if mantissa in ("1", "-1"):
            return mantissa.replace("1", "") + power_text
        return f"{mantissa} × {power_text}"
    decimals = max(digits - 1 - exponent, 0)
    text = f"{round(x, decimals):,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


# Count units as a reader says them: (singular, plural).
COUNT_WORDS = {
    "token": ("token", "tokens"),
    "parameter": ("parameter", "parameters"),
    "sequence": ("sequence", "sequences"),
    "value": ("value", "values"),
    "chip": ("chip", "chips"),
    "expert": ("expert", "experts"),
    "layer": ("layer", "layers"),
    "head": ("head", "heads"),
    "stage": ("stage", "stages"),
    "rack": ("rack", "racks"),
    "day": ("day", "days"),
    "week": ("week", "weeks"),
    "month": ("month", "months"),
    "year": ("year", "years"),
}
WORDS = {w for pair in COUNT_WORDS.values() for w in pair}
# A prefix on a count: "671 B parameters" before the number's unit, "per million tokens" after.
COUNT_PREFIX = {"": "", "kilo": "k ", "mega": "M ", "giga": "B ", "tera": "T ", "peta": "P "}
COUNT_PREFIX_PER = {
    "": "",
    "kilo": "thousand ",
    "mega": "million ",
    "giga": "billion ",
    "tera": "trillion ",
}
# Counts of at least this many are shown as whole numbers ("295 sequences", not "295.3").
WHOLE_FROM = 10


def _parts(u: pint.Unit):
    """``[(prefix, unit name, exponent)]`` of a unit, e.g. USD/Mtok -> USD^1, mega token^-1."""
    registry = u._REGISTRY
    out = []
    for name, exp in u._units.items():
        prefix, base, _ = registry.parse_unit_name(name)[0]
        out.append((prefix, base, exp, name))
    return out


def _symbol(u: pint.Unit, name: str) -> str:
    return f"{u._REGISTRY.Unit(name):~P}"


def _power(exp: float) -> str:
    exp = abs(exp)
    return "" if exp == 1 else superscript(int(exp)) if float(exp).is_integer() else f"^{exp}"


def unit(u: pint.Unit, singular: bool = False) -> str:
    """A unit as a reader says it: ``TB/s``, ``USD per million tokens``, ``bytes per token``,
    ``B parameters``; '' for a pure number."""
    parts = _parts(u)
    if not parts:
        return ""
    top, bottom = [], []
    spelled = False
    for prefix, base, exp, name in parts:
        if base in COUNT_WORDS and (prefix in COUNT_PREFIX):
            spelled = True
            if exp > 0:
                word = COUNT_WORDS[base][0 if singular else 1]
                top.append(COUNT_PREFIX[prefix] + word + _power(exp))
            else:
                if prefix not in COUNT_PREFIX_PER:
                    bottom.append(_symbol(u, name) + _power(exp))
                else:
                    word = COUNT_WORDS[base][1 if prefix else 0]  # per token, per million tokens
                    bottom.append(COUNT_PREFIX_PER[prefix] + word + _power(exp))
        else:
            text = _symbol(u, name) + _power(exp)
            (top if exp > 0 else bottom).append(text)
    if spelled:
        # "bytes per token": a lone byte above a spelled-out count reads as a word too
        top = ["bytes" if t == "B" and not singular else "byte" if t == "B" else t for t in top]
    numerator = "·".join(top)
    if not bottom:
        return numerator
    if any(b.split(" ")[-1].rstrip("⁰¹²³⁴⁵⁶⁷⁸⁹") in WORDS for b in bottom):
        denominator = " per ".join(bottom)
        return f"{numerator or '1'} per {denominator}"
    below = "·".join(bottom)
    return f"{numerator or '1'}/" + (below if len(bottom) == 1 else f"({below})")


def _is_count(u: pint.Unit) -> bool:
    parts = _parts(u)
    return (
        len(parts) == 1
        and parts[0][1] in COUNT_WORDS
        and parts[0][0] == ""
        and parts[0][2] == 1
        and parts[0][1] not in ("day", "week", "month", "year")
    )


def _plain(q: pint.Quantity) -> pint.Quantity:
    """Drop a prefix a reader does not say: 'YFLOP' and 'EB' become powers of ten of FLOP and
    bytes, 'Ttok' a count of tokens; 'B parameters' keeps its prefix (model sizes are said so)."""
    parts = _parts(q.units)
    unspoken = any(
        prefix in ("exa", "zetta", "yotta") or (base == "token" and prefix and exp > 0)
        for prefix, base, exp, _ in parts
    )
    if not unspoken:
        return q
    registry = q.units._REGISTRY
    target = registry.Unit("")
    for prefix, base, exp, name in parts:
        keep = prefix not in ("exa", "zetta", "yotta") and not (base == "token" and exp > 0)
        target *= registry.Unit(name if keep else base) ** exp
    return q.to(target)


def quantity(q: pint.Quantity, digits: int = 4) -> str:
    """A scalar quantity as ``'14.4 ms'``; counts of ten or more are whole numbers.

    >>> from units import Q_
    >>> quantity(Q_(2.976, "YFLOP")), quantity(Q_(263, "Ttok")), quantity(Q_(295.3, "seq"))
    ('2.976 × 10²⁴ FLOP', '2.63 × 10¹⁴ tokens', '295 sequences')
    >>> quantity(Q_(6.71e11, "parameter")), quantity(Q_(1.871e8, "parameter"))
    ('671 B parameters', '1.871 × 10⁸ parameters')
    """
    q = _plain(q)
    if _parts(q.units) == _parts(q.units._REGISTRY.Unit("parameter")) and abs(q.magnitude) >= 1e9:
        q = q.to("Gparameter")  # model sizes are said in billions: "671 B parameters"
    magnitude = float(q.magnitude)
    if _is_count(q.units) and math.isfinite(magnitude) and WHOLE_FROM <= abs(magnitude) < 1e6:
        magnitude = float(round(magnitude))
    value = number(magnitude, digits)
    text = unit(q.units, singular=value in ("1", "-1"))
    return f"{value} {text}" if text else value


def unit_text(text: str) -> str:
    """A unit written in pint's notation (``'USD/Mtok'``) as a reader says it."""
    from units import parse_unit

    return unit(parse_unit(text))


_SYMBOL_WORD = re.compile(r"^(?:[B-HJ-Zb-z]|[A-Za-z]+[_^\d*(\\].*|[a-z]+[A-Z].*|[$`\\].*)$")


def sentence(text: str) -> str:
    """Raw math as inline math (:func:`prose`); upper-case the first letter only (jinja's
    capitalize lowers the rest: 'HBM' -> 'Hbm'), and
    never when the text opens with a symbol ('n chips', 'f is any function', 'd_model grows')."""
    text = prose(text)
    first = text.split(" ", 1)[0].rstrip(",.;:")
    if _SYMBOL_WORD.match(first):
        return text
    return text[:1].upper() + text[1:]


GREEK = {
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "eta",
    "theta",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "pi",
    "rho",
    "sigma",
    "tau",
    "phi",
    "chi",
    "psi",
    "omega",
}
_SQRT = re.compile(r"\bsqrt\(([^()]+)\)")
_RECIPROCAL = re.compile(r"\b1/([a-z]{2,})\b")
_SUBSCRIPTED = re.compile(r"\b([A-Za-z])_([A-Za-z]+)\b")
_PROTECTED = re.compile(r"(\$[^$]*\$|`[^`]*`)")


def _tex_name(name: str) -> str:
    return f"\\{name}" if name in GREEK else name


def prose(text: str) -> str:
    """Raw math written as code in prose (``sqrt(K)``, ``t_mu``, ``1/eta``, ``c_fwd``) as inline
    math; text already in ``$…$`` or backticks is left alone.

    >>> print(prose("a = b = sqrt(K); RL runs at 1/eta of peak; divide by 3 c_fwd N"))
    a = b = $\\sqrt{K}$; RL runs at $1/\\eta$ of peak; divide by 3 $c_{\\mathrm{fwd}}$ N
    """
    parts = _PROTECTED.split(text)
    for i in range(0, len(parts), 2):
        part = _SQRT.sub(lambda m: f"$\\sqrt{{{m[1]}}}$", parts[i])
        part = _RECIPROCAL.sub(lambda m: f"$1/{_tex_name(m[1])}$", part)

        def sub(m):
            low = m[2]
            inner = _tex_name(low) if low in GREEK else f"\\mathrm{{{low}}}"
            return f"${_tex_name(m[1])}_{{{inner}}}$"

        parts[i] = _SUBSCRIPTED.sub(sub, part)
    return "".join(parts)


def given_text(name: str, value) -> str:
    """An input a case sets, as a reader says it: 'active parameters per token 100 B parameters'
    for n_active='100e9 parameter' (the symbol's meaning, the value formatted)."""
    import derivations
    from units import ChalkboardError, parse_quantity

    sym = derivations.SYMBOLS.get(name)
    label = name.replace("_", " ")
    if sym is not None and len(sym.meaning) <= 40:
        label = sym.meaning
    try:
        q = parse_quantity(str(value), what=name)
        if sym is not None:
            q = q.to(sym.display_unit)
        shown = quantity(q)
    except ChalkboardError:
        shown = str(value)
    return f"{label} {shown}"


def markdown_text(text: str) -> str:
    """Plain text made safe inside Markdown emphasis: a title "Crossover batch size B*" would
    otherwise end a bold span early and break the card.

    >>> markdown_text("Crossover batch size B*")
    'Crossover batch size B\\\\*'
    """
    return re.sub(r"([*_`\\])", r"\\\1", text)


_GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "eta": "η",
    "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν", "pi": "π", "rho": "ρ",
    "sigma": "σ", "tau": "τ", "phi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ",
    "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ",
    "Psi": "Ψ", "Omega": "Ω", "ell": "ℓ",
}  # fmt: skip
_TEX_WORDS = {
    "cdot": "·", "times": "×", "approx": "≈", "le": "≤", "ge": "≥", "infty": "∞", "log": "log",
    "exp": "exp", "max": "max", "min": "min", "quad": " ", ",": " ",
}  # fmt: skip
_BRACED = r"\{((?:[^{}]|\{[^{}]*\})*)\}"


def _tex_word(m: re.Match) -> str:
    return _GREEK.get(m[1], _TEX_WORDS.get(m[1], m[1]))


def plain_math(text: str) -> str:
    r"""Text with ``$...$`` LaTeX as a terminal shows it: fractions, sub- and superscripts and
    Greek letters in plain characters (the CLI's text output; pages keep their typeset math).

    >>> plain_math(r"so $I^{*} = \frac{F}{W}$ and $t_{\mathrm{drain}}$, $\Theta / B$")
    'so I^* = F/W and t_drain, Θ / B'
    >>> plain_math(r"$$\frac{c_{\mathrm{fwd}} B N}{n \left(F + 1\right)}$$")
    '(c_fwd B N)/(n (F + 1))'
    """

    def group(s: str) -> str:
        return s if re.fullmatch(r"[\w.*]+", s) else f"({s})"

    def convert(tex: str) -> str:
        tex = re.sub(r"\\(?:mathrm|mathit|text|operatorname|mathbf)" + _BRACED, r"\1", tex)
        tex = tex.replace(r"\left", "").replace(r"\right", "")
        for _ in range(4):  # nested fractions and roots, innermost first
            tex = re.sub(
                r"\\frac" + _BRACED + _BRACED,
                lambda m: f"{group(convert(m[1]))}/{group(convert(m[2]))}",
                tex,
            )
            tex = re.sub(r"\\sqrt" + _BRACED, lambda m: f"√{group(convert(m[1]))}", tex)
        tex = re.sub(r"([_^])" + _BRACED, lambda m: m[1] + group(m[2]).strip("()"), tex)
        tex = re.sub(r"\\([A-Za-z]+|,)", _tex_word, tex)
        return re.sub(r"\s+", " ", tex.replace("{", "").replace("}", "")).strip()

    text = re.sub(r"\$\$(.+?)\$\$", lambda m: convert(m[1]), text, flags=re.S)
    return re.sub(r"(?<!\\)\$(.+?)(?<!\\)\$", lambda m: convert(m[1]), text, flags=re.S)
