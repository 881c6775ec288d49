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

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the fast CLI imports this module without pint
    import pint

# The rules themselves live in units/display.py: the Jupyter displays of equations and
# results (derivations/) share them.
from units.display import (  # noqa: F401 (public names of this module)
    COUNT_PREFIX,
    COUNT_PREFIX_PER,
    COUNT_WORDS,
    SCIENTIFIC_BELOW,
    SCIENTIFIC_FROM,
    SUPERSCRIPT,
    WHOLE_FROM,
    WORDS,
    number,
    quantity,
    spoken,
    spoken_number,
    superscript,
    unit,
)


class Said(str):
    """A figure with two readings: the text itself is exact (3-4 figures, what tables, cards,
    the CLI and tests read), and ``.said`` is how a sentence says it (2-3 figures in a natural
    unit). A page's template prints ``.said`` wherever it places the figure (jinja's finalize,
    :mod:`book.templating`); ``{{ x.exact }}`` keeps the exact text, ``{{ x.about }}`` says
    "about" when the spoken value is rounded.

    >>> from units import Q_
    >>> t = said(Q_(0.6249, "min"))
    >>> t, t.said, t.about, t.exact
    ('0.6249 min', '37 s', 'about 37 s', '0.6249 min')
    """

    said: str
    about: str

    def __new__(cls, exact: str, said: str = "", about: str = ""):
        self = super().__new__(cls, exact)  # (pickle calls it with the exact text alone)
        self.said, self.about = said or exact, about or said or exact
        return self

    @property
    def exact(self) -> str:
        return str.__str__(self)


def said(q: pint.Quantity, digits: int = 4) -> Said:
    """``q`` exact (:func:`quantity`) and as a sentence says it (:func:`spoken`)."""
    return Said(quantity(q, digits), spoken(q, most=digits), spoken(q, about=True, most=digits))


def said_number(x: float, digits: int = 4) -> Said:
    """``x`` exact (:func:`number`) and as a sentence says it (:func:`spoken_number`).

    >>> said_number(131.53).said, said_number(0.34632).said, said_number(80).said
    ('132', '0.35', '80')
    """
    shown = spoken_number(x, most=digits)
    exact = number(x, digits)
    return Said(exact, shown, shown if shown == number(x, 15) else f"about {shown}")


def context_tokens(q: pint.Quantity, digits: int = 4) -> str:
    """A context length (tokens per sequence) as prose says it: the tokens of one sequence's
    context, ``'8,192 tokens'``; a table's column says "tokens per sequence" in its heading.

    >>> from units import Q_
    >>> context_tokens(Q_(200, "ktoken/sequence")), quantity(Q_(200, "ktoken/sequence"))
    ('200,000 tokens', '200,000 tokens per sequence')
    """
    one_sequence = q._REGISTRY.Quantity(1, "sequence")
    return quantity((q * one_sequence).to("token"), digits)


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


def named(latex: str) -> str:
    """A symbol's name in brackets after its meaning: ``(B)``; a name already bracketed (a
    ratio's, ``\\left(\\Theta / B\\right)``) is not bracketed twice.

    >>> named("B"), named(r"\\left(\\Theta / B\\right)")
    ('($B$)', '$\\\\left(\\\\Theta / B\\\\right)$')
    """
    return f"${latex}$" if latex.startswith(r"\left(") else f"(${latex}$)"


def given_text(name: str, value) -> str:
    """An input a case sets, as a reader says it: 'active parameters per token 100 B parameters'
    for n_active='100e9 parameter' (the symbol's meaning, the value formatted)."""
    import derivations
    from derivations.inputs import parse_override
    from units import ChalkboardError, parse_quantity

    sym = derivations.SYMBOLS.get(name)
    label = name.replace("_", " ")
    if sym is not None and len(sym.meaning) <= 40:
        label = sym.meaning
    try:
        if sym is not None:  # a bare number is read in the symbol's unit, as an override is
            q = parse_override(name, value).to(sym.display_unit)
        else:
            q = parse_quantity(str(value), what=name)
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


def chip_name(hw) -> str:
    """A chip as a sentence names it: the preset's label without the maker and without the
    "(per GPU)" tag that tells a table its figures are per GPU ("a GB200 NVL72 rack", not
    "A NVIDIA GB200 NVL72 (per GPU) rack").

    >>> from units.presets import load
    >>> hardware = load().by_kind["hardware"]
    >>> chip_name(hardware["gb200_nvl72"]), chip_name(hardware["h100_sxm"])
    ('GB200 NVL72', 'H100 SXM')

    A chip known only from the lecture's figures is named as the lecture's:

    >>> chip_name(hardware["rubin"])
    "the lecture's Rubin"
    """
    name = hw.name.removeprefix("NVIDIA ").replace(" (per GPU)", "")
    if getattr(hw, "source", None) == "lecture":
        return "the lecture's " + name.replace(" (as stated in the lecture)", "")
    return name
