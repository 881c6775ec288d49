"""The practice problems' answer checker: grades a typed answer and says why a wrong one is wrong.

One algorithm, two faces: this module (the CLI's ``chalkboard problems --check``) and the
browser's ``book/assets/javascripts/answer-check.js``, which mirrors :func:`check` step by step
on the same data: the unit table :func:`unit_table` writes to ``javascripts/units.js`` (every
unit name, prefix, scale word, phrase and diagnosis, read from the project's pint registry) and
each problem's :func:`answer_spec`. Text is read as :mod:`units.reading` reads it ("1.152 T
parameters", "2.63 × 10¹⁴ tokens", "$0.18 per million tokens"); the tests run both faces on
many answers to every site problem and require the same verdict and message.

A right answer is within the problem's tolerance of the true value, or of the value its
solution prints ("24 layers" for 23.5). Every statement names the unit of its answer, and the
answer is graded in it: a bare number ("239", "8,681", "2.21") is read in that unit (the
answer's own, ``answer.units``), a number with only a scale word ("2.16T") in its base unit
(tokens), and a count may also be written out in full ("28e9" for "28 B parameters"). An
answer asked per sequence may leave the "per sequence" unsaid ("86 tokens/s", "49,200
tokens"); "per user", "per conversation", "per request" and "per stream" are per sequence
(:data:`units.reading.SEQUENCE_WORDS`); a count the answer does not name ("2.21 tokens per
step") is allowed. On a count, "B" alone is billions of it ("178 B" for 178 B parameters), as
before a count noun (a pure number, a ratio, only when billions are right: "2667 B" for 61.44 is
bytes); on an amount of money, billions of dollars ("$7.3B", "7.3B"), as money is written;
elsewhere it is bytes. A pure number takes any noun for what it counts ("9
replicas", "9 users"; :data:`COUNT_NOUNS`), a count only its own. Text that cannot be read
whole may start with a label, the option a design problem's answer chose ("flash 0.0446",
"B200 at FP8: 12.3 ms"): it is dropped and the rest graded (:func:`unlabelled`). A wrong one is
diagnosed, first match wins: a dimension
said in plain words ("That is a time; the question asks for a cost per token."), one of the
problem's own listed mistakes, a share typed without its % ("32.9" for 0.329), a power of ten
(a prefix slip when it is 10³ⁿ), a time-unit slip (×24, ×60, ×365), a factor of 2, 3 or 8,
or just outside a relative window (rounded too soon: "carry more figures"). Zero is graded
like any answer ("0": no conversation fits), right only when the answer is 0; a negative number
is refused.

>>> from units import Q_
>>> spec = spec_of(Q_(24, "ms"))
>>> check("0.024 s", spec)["ok"], check("24 GB", spec)["message"]
(True, 'That is an amount of data; the question asks for a time (in ms).')
>>> check("24 s", spec)["message"]
'That is 1,000 times too large: a unit prefix slipped (k, M, G step by 1,000).'
>>> check("24", spec)["ok"], check("86 tok/s per user", spec_of(Q_(86, "token/s/sequence")))["ok"]
(True, True)
"""

from __future__ import annotations

import functools
import math
import re

import pint

from units import Q_, ChalkboardError
from units.display import number as spoken
from units.display import unit as unit_words
from units.reading import MAX_CHARS, RATIOS, SCALES, SEQUENCE_WORDS, SYMBOLS, WHITESPACE, read
from units.registry import spelled

# The dimensions the checker compares, in the order of its vectors (answer-check.js reads the
# table's "dims"): tokens and sequences are dimensions of their own (units/definitions.txt), so
# "560 chips" or "560 tokens" is not a number of sequences.
DIMENSIONS = ("[time]", "[information]", "[compute]", "[currency]", "[token]", "[sequence]")
# Unit names the checker reads, short and long; plurals ("seconds", "tokens", "FLOPs") are
# added from these wherever the registry itself accepts them, so Python and the browser agree.
UNIT_NAMES = (
    *("s", "second", "sec", "min", "minute", "h", "hr", "hour", "d", "day", "week"),
    *("month", "yr", "year"),
    *("B", "byte", "b", "bit", "Bps", "bps"),
    *("FLOP", "flop", "FLOPS"),
    *("USD", "dollar", "cent"),
    *("token", "tok", "parameter", "param", "sequence", "seq", "chip", "gpu", "value", "val"),
    *("vector", "expert", "layer", "head", "stage", "rack", "step"),
)
PREFIX_NAMES = (
    *("n", "nano", "µ", "u", "micro", "m", "milli", "k", "kilo", "M", "mega", "G", "giga"),
    *("T", "tera", "P", "peta", "E", "exa", "Z", "zetta", "Y", "yotta"),
    *("Ki", "Mi", "Gi", "Ti", "Pi"),
)
# How a wrong dimension is said: the common ones by name, any other in its base units' words.
PHRASES = {
    "s": "a time",
    "B": "an amount of data",
    "FLOP": "an amount of compute",
    "USD": "a cost",
    "token": "a number of tokens",
    "sequence": "a number of sequences",
    "": "a pure number",
    "B/s": "a bandwidth",
    "FLOP/s": "a compute rate",
    "USD/token": "a cost per token",
    "USD/s": "a price per unit of time",
    "USD/FLOP": "a cost per FLOP",
    "token/s": "a rate in tokens per second",
    "token/s/sequence": "a speed in tokens per second per sequence",
    "token/sequence": "a number of tokens per sequence",
    "FLOP/B": "an arithmetic intensity (FLOP per byte)",
    "B/token": "an amount of data per token",
    "B/sequence": "an amount of data per sequence",
    "FLOP/token": "an amount of compute per token",
    "s/token": "a time per token",
    "1/s": "a rate per second",
}
# Words for the base units, for a dimension with no phrase: (above the line, below the line).
BASE_WORDS = (
    ("seconds", "second"),
    ("bytes", "byte"),
    ("FLOP", "FLOP"),
    ("USD", "USD"),
    ("tokens", "token"),
    ("sequences", "sequence"),
)
# Small factors a wrong answer is often off by, and why (checked after powers of ten): the
# factor, the messages over and under, and the same for an amount of memory (data, with no time,
# compute or cost in it), where no FLOP is counted (reader 29 was told to check 2N against 6N
# for a third of an activation memory).
RATIOS_WHY = (
    (
        2,
        "That is twice the answer: check a factor of 2 (bytes per value, or forward against "
        "forward and backward).",
        "That is half the answer: check a factor of 2 (bytes per value, or forward against "
        "forward and backward).",
        "That is twice the answer: check a factor of 2 (bytes per value, or a key and a value).",
        "That is half the answer: check a factor of 2 (bytes per value, or a key and a value).",
    ),
    (
        3,
        "That is 3 times the answer: check 2N against 6N FLOPs per token (forward only, or "
        "forward and backward).",
        "That is a third of the answer: check 2N against 6N FLOPs per token (forward only, or "
        "forward and backward).",
        "That is 3 times the answer: check how many layers' or copies' worth you counted.",
        "That is a third of the answer: check how many layers' or copies' worth you counted.",
    ),
    (
        8,
        "That is 8 times the answer: check bits against bytes.",
        "That is an eighth of the answer: check bits against bytes.",
        "That is 8 times the answer: check bits against bytes.",
        "That is an eighth of the answer: check bits against bytes.",
    ),
)
# Time-unit slips (a value in one unit labelled as another), named when the answer has a time in
# it: the factor, and the units it confuses (the larger unit first).
TIME_SLIPS = (
    (24, "hours and days (24 to a day)"),
    (60, "minutes and seconds, or hours and minutes (60 to one)"),
    (365, "days and years (365 to a year)"),
)
# A bare number typed for a share: "32.9" for 0.329 (the text, then the number it holds).
BARE_NUMBER = r"[ \t\n\r\f\v]*([0-9]+(?:\.[0-9]+)?)[ \t\n\r\f\v]*"
TOKEN, SEQUENCE = DIMENSIONS.index("[token]"), DIMENSIONS.index("[sequence]")
TIME, DATA, COMPUTE, CURRENCY = (
    DIMENSIONS.index(d) for d in ("[time]", "[information]", "[compute]", "[currency]")
)
MAX_TENS = 12  # powers of ten a diagnosis names, at most
SLACK = 1e-12  # rounding room at the edges of a tolerance
# Words a student names a count with that the registry has no unit for ("9 replicas", "3
# nodes"): each counts itself, like the registry's chips and racks, so a pure number takes it
# and another count is named as such ("That counts replicas; the question asks for chips").
COUNT_NOUNS = ("replica", "node", "server", "machine", "instance", "worker", "host", "pod")
# A design problem's answer typed after the option chosen ("flash 0.0446", "B200 at FP8: 12.3
# ms"): a label ended by ':' or ',' (starting with a letter, its last word not a number), or
# words that name the problem's options, joined by these, come before the number.
LABEL = re.compile(r"([A-Za-z][A-Za-z0-9 ._()+/-]{0,39}?)[ \t]*[:,][ \t\n\r\f\v]*", re.ASCII)
LABEL_WORD = re.compile(r"([A-Za-z0-9()._+&=-]+)[ \t\n\r\f\v]+", re.ASCII)
LABEL_FILLERS = ("at", "in", "on", "with", "and", "using", "for", "is", "=", "-", "+", "&")
PLAIN_NUMBER = re.compile(r"[0-9.,]+", re.ASCII)
MAX_LABELS = 6  # labels stripped in turn, at most
# An answer just outside a relative window (within CLOSE times the tolerance, and within
# CLOSE_MAX of the answer) is close: rounded too early or too coarsely, and told how many
# significant figures the window needs (the fewest, from two, whose rounding stays inside half
# of it) rather than to check working that may be right.
CLOSE, CLOSE_MAX = 3, 0.05
FIGURES = ("two", "three", "four", "five", "six")


def dims_vector(q: pint.Quantity) -> list[float]:
    d = q.dimensionality
    return [float(d.get(name, 0)) for name in DIMENSIONS]


def count_unit(name: str) -> str | None:
    """The dimensionless count a unit name stands for ("chips" -> "chip", "Gparam" ->
    "parameter"), or None. These counts (chips, parameters, layers, ...) are dimensionless in the
    registry, so the checker compares their names instead; tokens and sequences are dimensions
    and compared as such (None here).

    >>> count_unit("chips"), count_unit("Gparam"), count_unit("Mtokens"), count_unit("ms")
    ('chip', 'parameter', None, None)
    """
    q = Q_(1, name)
    if not q.dimensionless:
        return None
    registry = q._REGISTRY
    root = registry.get_name(name)
    for prefix in registry._prefixes:
        if prefix and root.startswith(prefix) and root[len(prefix) :] in registry._units:
            candidate = root[len(prefix) :]
            if Q_(1, candidate).dimensionless:
                root = candidate
                break
    return root


def _units_of(q: pint.Quantity) -> dict[str, float]:
    """The count units in ``q``'s unit with their exponents: experts/chip -> {"expert": 1,
    "chip": -1}."""
    out: dict[str, float] = {}
    for name, power in q.units._units.items():
        if (count := count_unit(name)) is not None:
            out[count] = out.get(count, 0) + float(power)
    return {k: v for k, v in out.items() if v}


def _key(dims) -> str:
    """A dimension vector as the table's key: '0,0,0,1,-1,0' (the same text in JavaScript)."""
    return ",".join(str(int(d)) if float(d).is_integer() else repr(float(d)) for d in dims)


@functools.cache
def unit_table() -> dict:
    """Everything the checker reads besides the problem: each unit name with its factor to base
    units, its dimensions and the count it names (or None), read from the project's own pint
    registry; the registry's prefixes; the reader's scale words, ratios and symbols; the
    phrases for dimensions; the diagnoses by factor.

    >>> table = unit_table()
    >>> table["units"]["FLOPS"][:2], table["scales"]["billion"]
    ([1.0, [-1.0, 0.0, 1.0, 0.0, 0.0, 0.0]], 1000000000.0)
    """
    names = list(UNIT_NAMES)
    for name in UNIT_NAMES:
        plural = name + "s"
        if len(name) > 2 and plural not in names:
            try:
                same = Q_(1, plural).to_base_units() == Q_(1, name).to_base_units()
            except (pint.errors.UndefinedUnitError, pint.errors.DimensionalityError):
                continue
            if same:
                names.append(plural)
    units = {}
    for name in names:
        q = Q_(1, name).to_base_units()
        units[name] = [float(q.magnitude), dims_vector(q), count_unit(name)]
    registry = Q_(1, "s")._REGISTRY
    prefixes = {p: float(registry._prefixes[p].converter.scale) for p in PREFIX_NAMES}
    phrases = {_key(dims_vector(Q_(1, u).to_base_units())): text for u, text in PHRASES.items()}
    tens = [[float(10**n), spoken(10**n)] for n in range(1, MAX_TENS + 1)]
    return {
        "dims": [d.strip("[]") for d in DIMENSIONS],
        "units": units,
        "prefixes": prefixes,
        "scales": dict(SCALES),
        "ratios": dict(RATIOS),
        "symbols": dict(SYMBOLS),
        "sequence_words": dict(SEQUENCE_WORDS),
        "count_nouns": {w + plural: w for w in COUNT_NOUNS for plural in ("", "s")},
        "phrases": phrases,
        "words": [list(w) for w in BASE_WORDS],
        "tens": tens,
        "factors": [[float(k), *why] for k, *why in RATIOS_WHY],
        "timeslips": [[float(k), spoken(k), words] for k, words in TIME_SLIPS],
        "close": [float(CLOSE), CLOSE_MAX],
        "figures": list(FIGURES),
    }


def spec_of(
    answer: pint.Quantity,
    tolerance: float = 0.01,
    mode: str = "relative",
    shown: str | None = None,
    mistakes=(),
    labels=(),
) -> dict:
    """What the checker compares against: the answer in base units, its dimensions and counts,
    the tolerance, the unit to show in a message, the value the solution prints (``shown``,
    the text of that answer: a whole number may be rounded, "24 layers" for 23.5) and the
    listed mistakes (``{"value", "why"}`` in base units; with ``"dims"`` when a mistake's
    dimension differs from the answer's) and, for a design problem, ``labels``: the words that
    name its options, lowercase, which may come before the number (:func:`unlabelled`)."""
    from units.display import quantity

    base = answer.to_base_units()
    spec = {
        "value": float(base.magnitude),
        "dims": dims_vector(base),
        "counts": _units_of(answer),
        "tolerance": tolerance,
        "mode": mode,
        "unit": spelled(answer.units),  # "token/sequence", never pint's "tok/seq"
        "said": unit_words(answer.units),  # in messages: "USD per million tokens"
        # a bare number ("239") is read in the answer's unit, the one the statement names
        "bare": float(Q_(1, answer.units).to_base_units().magnitude),
    }
    printed = _value_in(shown if shown is not None else quantity(answer), spec)
    if printed is not None:
        spec["shown"] = printed
    out = []
    for m in mistakes:
        value, why = (m["value"], m["why"]) if isinstance(m, dict) else (m.value, m.why)
        entry = {"why": why}
        if isinstance(value, pint.Quantity):
            wrong = value.to_base_units()
            entry["value"] = float(wrong.magnitude)
            if dims_vector(wrong) != spec["dims"]:
                entry["dims"] = dims_vector(wrong)
        else:
            entry["value"] = float(value)  # already in the answer's base units
        out.append(entry)
    spec["mistakes"] = out
    if labels:
        spec["labels"] = sorted(set(labels))
    return spec


def _value_in(text: str, spec: dict) -> float | None:
    """The base value of an answer's printed text, when it reads in the answer's dimension and
    rounds the answer by at most 5% (a whole number of ten or more); else None."""
    try:
        got = _measure(text, unit_table())
    except ChalkboardError:
        return None
    if got["dims"] != spec["dims"] or not got["value"] > 0:
        return None
    return got["value"] if abs(got["value"] / spec["value"] - 1) <= 0.05 else None


def answer_spec(p) -> dict:
    """The checker's spec of a practice problem (see :func:`spec_of`): its answer as the
    solution prints it, its tolerance, its listed mistakes (``p.mistakes``, if any) and the
    names of its options (:func:`choice_labels`)."""
    mistakes = getattr(p, "mistakes", ()) or ()
    labels = choice_labels(getattr(p, "choices", None) or {})
    return spec_of(p.answer, p.tolerance, p.mode, mistakes=mistakes, labels=labels)


# The preset kinds whose every option a design problem may offer: a label may name any of them
# (the option a student chose, right or wrong), in its id's words or its name's.
LABEL_KINDS = ("hardware", "precision")
LABEL_STOPWORDS = ("per", "the", "as", "of", "a", "an", "in", "on", "at", "and", "or", "to")


def choice_labels(choices: dict) -> list[str]:
    """The words that name a problem's options, lowercase: each chosen option's words (its
    id's, split at '_'), and for a chosen chip or precision every preset of that kind, by id
    and by name ("b200", "nvidia", "hgx", "fp8"). Numbers (a batch of 737) and words the
    checker reads as units ("GPU") are left out: a label never stands for a number or a unit.

    >>> choice_labels({"where": "flash", "batch_size": 737})
    ['flash']
    >>> {"mi300x", "amd", "instinct", "b200", "hgx", "fp8", "bf16"} <= set(
    ...     choice_labels({"hardware": "mi300x", "precision": "fp8"}))
    True
    """
    texts = [str(v) for v in choices.values() if isinstance(v, str)]
    if any(k in choices for k in LABEL_KINDS):
        from units.presets import load

        presets = load()
        for kind in LABEL_KINDS:
            if kind in choices:
                for pid in presets.ids(kind):
                    name = str(getattr(presets.get(kind, pid), "name", "") or "")
                    # not a remark in brackets: "(per GPU)", "(as stated in the lecture)"
                    texts += [pid, re.sub(r"\([^)]*\s[^)]*\)", " ", name)]
    table, words = unit_table(), set()
    for t in texts:
        for w in re.split(r"[^a-z0-9.]+", t.lower()):
            w = w.strip(".")
            name = re.fullmatch(r"[a-z][a-z0-9.]*", w, re.ASCII) and w not in LABEL_STOPWORDS
            if name and lookup(w, table) is None and w not in table["scales"]:
                words.add(w)
    return sorted(words)


# -- the algorithm (answer-check.js mirrors each function) ------------------------------------


def lookup(name: str, table: dict):
    """A unit name -> ``[factor, dims, count name or None]``: exact, else a prefix (short or
    long) on a unit, else the same with the case relaxed ("MTok", "Tokens"; a B keeps its case:
    bytes are not bits); None when unknown."""
    candidates = [name]
    if len(name) >= 3:
        relaxed = "".join(c if c == "B" else c.lower() for c in name)
        candidates += [name[0] + relaxed[1:], relaxed]
    for candidate in candidates:
        found = _lookup_exact(candidate, table)
        if found is not None:
            return found
    noun = table.get("count_nouns", {}).get(name.lower())
    if noun is not None:  # "replicas": a count of its own, dimensionless
        return [1.0, [0.0] * len(table["dims"]), noun]
    return None


def _lookup_exact(name: str, table: dict):
    units = table["units"]
    if name in units:
        return units[name]
    for p in sorted(table["prefixes"], key=lambda p: -len(p)):
        rest = name[len(p) :]
        if name.startswith(p) and rest and rest in units:
            u = units[rest]
            return [table["prefixes"][p] * u[0], u[1], u[2]]
    return None


def _is_noun(table: dict):
    def noun(name: str) -> bool:
        u = lookup(name, table)
        return u is not None and not u[1][0] and not u[1][1]

    return noun


def _measure(text: str, table: dict) -> dict:
    """``{value (base units), dims, counts, bare_bytes, bare, scaled}`` of typed text (``bare``:
    a plain number; ``scaled``: a number with only a scale word, "2.16T"); ChalkboardError with
    the message to show when it cannot be read."""
    reading = read(text, _is_noun(table))
    n = len(table["dims"])
    factor, dims, counts = 1.0, [0.0] * n, {}
    for name, power in reading.factors:
        u = lookup(name, table)
        if u is None:
            raise ChalkboardError(f"unknown unit '{name}'")
        for _ in range(abs(power)):
            factor = factor * u[0] if power > 0 else factor / u[0]
        for k in range(n):
            dims[k] += power * u[1][k]
        if u[2]:
            counts[u[2]] = counts.get(u[2], 0) + power
    counts = {c: p for c, p in counts.items() if p}
    value = reading.number * factor
    return {
        "value": value,
        "dims": dims,
        "counts": counts,
        "bare_bytes": reading.bare_bytes,
        # "178 B": a number and B alone, which a count's or a cost's answer reads as billions
        "bytes_alone": reading.bare_bytes and reading.factors == [("B", 1)],
        # "$7.3B": dollars and B alone, which a cost's answer reads as billions of dollars
        "money_bytes": reading.bare_bytes and reading.factors == [("USD", 1), ("B", 1)],
        "number": reading.number,
        "per_scale": reading.per_scale,
        "bare": reading.bare,
        "scaled": not reading.factors and reading.scaled,
    }


def _phrase(dims, counts: dict, table: dict) -> str:
    """A dimension in plain words, with what it is per ("a rate in tokens per second per
    chip")."""
    if counts and not any(dims):
        return "a number of " + _counts_text(counts)
    per = "".join(f" per {c}" for c in sorted(counts) if counts[c] == -1)
    return _dims_phrase(dims, table) + per


def _dims_phrase(dims, table: dict) -> str:
    key = _key(dims)
    if key in table["phrases"]:
        return table["phrases"][key]
    above, below = [], []
    for k, d in enumerate(dims):
        if d:
            word = table["words"][k][0 if d > 0 else 1]
            power = abs(d)
            word += "" if power == 1 else "^" + _key([power])
            (above if d > 0 else below).append(word)
    return "a quantity in " + " per ".join([" × ".join(above) or "1", *below])


def _counts_text(counts: dict) -> str:
    names = sorted(counts, key=lambda c: (-counts[c], c))
    words = []
    for c in names:
        power = abs(counts[c])
        mark = "" if power == 1 else "^" + _key([power])
        words.append(("per " + c if counts[c] < 0 else c + "s") + mark)
    return " ".join(words)


def _within(x: float, centres: list[float], spec: dict) -> bool:
    """Whether ``x`` lies in the tolerance window spanning ``centres`` (relative or factor)."""
    low, high = min(centres), max(centres)
    t = spec["tolerance"]
    if spec["mode"] == "factor":
        low, high = low / t, high * t
    else:
        low, high = low * (1 - t), high * (1 + t)
    return low * (1 - SLACK) <= x <= high * (1 + SLACK)


def _same(a, b) -> bool:
    return all(abs(x - y) <= 1e-9 for x, y in zip(a, b, strict=True))


def check(text: str, spec: dict, table: dict | None = None) -> dict:
    """Grade ``text`` against ``spec``: ``{"ok", "kind", "message"}`` where kind is "right",
    "wrong" (with its diagnosis) or "unreadable" (the text is not a number with a known unit).
    """
    table = table or unit_table()
    try:
        got = _measure(text, table)
    except ChalkboardError as err:
        rest = unlabelled(text, spec.get("labels") or [])
        try:
            if rest is None:
                raise err
            got, text = _measure(rest, table), rest  # "flash 0.0446": the option, then the answer
        except ChalkboardError as why:
            message = str(why)
            return _verdict("unreadable", message[:1].upper() + message[1:] + ".")
    centres = [spec["value"]] + ([spec["shown"]] if "shown" in spec else [])
    billions = got["number"] * table["scales"]["B"]
    if (
        got["bytes_alone"]
        and (_is_count(spec) or _is_money(spec))
        and (not _pure(spec) or _within(billions, centres, spec))
    ):
        # "178 B" for a count: billions of it, as "178 B parameters" says; "7.3B" for a cost,
        # billions of dollars, as money is written (bytes otherwise). A pure number (a ratio)
        # takes billions only when they are right: "2667 B" is bytes, a dimension to name
        got["value"], got["scaled"] = billions, True
    if got["money_bytes"] and _is_money(spec):
        # "$7.3B", "$7.3 B": billions of dollars (B before USD already is: "7.3B USD")
        got["value"] = got["value"] / table["units"]["B"][0] * table["scales"]["B"]
        got["dims"] = list(spec["dims"])
    if "bare" in spec and (got["bare"] or got["scaled"]):
        got["value"] = _bare_value(got, spec)
        got["dims"], got["counts"] = list(spec["dims"]), dict(spec.get("counts") or {})
    value = got["value"]
    if not (value >= 0 and math.isfinite(value)):
        return _verdict("unreadable", "Give a positive number.")
    mistakes = spec.get("mistakes", [])
    if not _same(got["dims"], spec["dims"]):
        if near := _nearest(
            [m for m in mistakes if "dims" in m and _same(got["dims"], m["dims"])], value, spec
        ):
            return _verdict("wrong", near["why"])
        if _per_unsaid(got["dims"], spec["dims"], SEQUENCE) and not got["counts"]:
            got["dims"] = list(spec["dims"])  # "86 tokens/s" for each sequence: per sequence
        if got["per_scale"] and _per_unsaid(got["dims"], spec["dims"], TOKEN):
            got["dims"] = list(spec["dims"])  # "$0.60/M": per million tokens, as prices are said
        if _pure(spec) and _is_sequences(got) and not got["counts"]:
            got["dims"] = list(spec["dims"])  # "9 users" for a count the question names
    if not _same(got["dims"], spec["dims"]):
        if got["bare_bytes"] and not spec["dims"][TIME] and not spec["dims"][DATA] and spec["said"]:
            # B may scale the question's unit ("3 B FLOP"): say how to write billions of it
            return _verdict(
                "wrong",
                f"B alone means bytes: for billions, name the unit after the B "
                f"(B {spec['said']}) or write billion.",
            )
        want = _phrase(spec["dims"], spec.get("counts") or {}, table)
        shown = "" if spec.get("said", "") in want or not any(spec["dims"]) else _in_unit(spec)
        that = _phrase(got["dims"], got["counts"], table)
        return _verdict("wrong", f"That is {that}; the question asks for {want}{shown}.")
    want = spec.get("counts") or {}
    if want and got["counts"] and got["counts"] != want:
        return _verdict(
            "wrong",
            f"That counts {_counts_text(got['counts'])}; the question asks for "
            f"{_counts_text(want)}{_in_unit(spec)}.",
        )
    if _within(value, centres, spec):
        return _verdict("right", "Correct.")
    if near := _nearest([m for m in mistakes if "dims" not in m], value, spec):
        return _verdict("wrong", near["why"])
    if value == 0:  # "0": no conversation fits, say; graded, not refused
        return _verdict("wrong", "Zero is not the answer: check your working.")
    bare = re.fullmatch(BARE_NUMBER, text)
    share = not any(spec["dims"]) and not spec.get("counts") and spec["value"] < 1
    if bare and share and spec["mode"] != "factor" and _within(value / 100, centres, spec):
        return _verdict("wrong", f"That is 100 times the answer, a share: did you mean {bare[1]}%?")
    for i, (ten, words) in enumerate(table["tens"]):
        slip = "a unit prefix slipped (k, M, G step by 1,000)"
        why = slip if (i + 1) % 3 == 0 else "check your powers of ten"
        if _within(value / ten, centres, spec):
            return _verdict("wrong", f"That is {words} times too large: {why}.")
        if _within(value * ten, centres, spec):
            return _verdict("wrong", f"That is {words} times too small: {why}.")
    timed = spec["dims"][0] and spec["mode"] != "factor"
    for k, said, words in table["timeslips"] if timed else []:
        slip = f"a time unit slipped, {words}."
        if _within(value / k, centres, spec):
            return _verdict("wrong", f"That is {said} times the answer: {slip}")
        if _within(value * k, centres, spec):
            return _verdict("wrong", f"That is {said} times too small: {slip}")
    memory = _is_memory(spec)
    for k, *why in table["factors"] if spec["mode"] != "factor" else []:
        more, less = why[2:] if memory else why[:2]
        if _within(value / k, centres, spec):
            return _verdict("wrong", more)
        if _within(value * k, centres, spec):
            return _verdict("wrong", less)
    if close := _close(value, centres, spec, table):
        return _verdict("wrong", close)
    return _verdict("wrong", "Not right, and not off by a simple factor: check your working.")


def _close(value: float, centres: list[float], spec: dict, table: dict) -> str | None:
    """The message for an answer just outside a relative window (:data:`CLOSE`), or None:
    "18" for 17.53 graded to 2% is right working rounded too coarsely.

    >>> _close(18, [17.53], {"tolerance": 0.02, "mode": "relative"}, unit_table())
    'Close, but outside the ±2% this is graded to: carry more figures (three significant figures).'
    """
    t = spec["tolerance"]
    times, most = table["close"]
    wider = min(times * t, most)
    if spec["mode"] != "relative" or not wider > t:
        return None
    if not _within(value, centres, {"tolerance": wider, "mode": "relative"}):
        return None
    words = table["figures"]
    n = 0  # two figures, then more, until rounding's error (5 in the next place) is t/2 or less
    while n < len(words) - 1 and t * 10 ** (n + 2) < 10 * (1 - SLACK):
        n += 1
    percent = f"{t * 100:.2f}".rstrip("0").rstrip(".")
    return (
        f"Close, but outside the ±{percent}% this is graded to: carry more figures "
        f"({words[n]} significant figures)."
    )


def _bare_value(got: dict, spec: dict) -> float:
    """A number typed with no unit, in base units. The statement names the answer's unit, so
    "239" is 239 of it; a number with only a scale word ("2.16T") is in the base unit (2.16
    trillion tokens); a count may also be written out in full ("28e9" for 28 B parameters):
    of its two readings the one nearer the answer is taken (they are ``spec["bare"]`` apart,
    10⁹ here, so no wrong answer comes near by it)."""
    x = got["value"]
    if got["scaled"]:
        return x
    named = x * spec["bare"]
    if any(spec["dims"][:TOKEN]) or not (x > 0 and named > 0) or spec["bare"] == 1:
        return named  # not a count, or nothing to choose
    v = spec["value"]
    return named if max(named / v, v / named) <= max(x / v, v / x) else x


def unlabelled(text: str, labels) -> str | None:
    """``text`` without the labels before its number, or None when it has none: a label ended
    by ':' or ',' ("B200 at FP8: 12.3 ms", "flash, $0.0446"; its last word is not a number, so
    "about 1,234" keeps its digits), or words among ``labels`` (the problem's option names,
    lowercase) joined by :data:`LABEL_FILLERS` ("flash 0.0446", "MI300X in FP8 17¢ per million
    tokens"). The checker strips them only from text it cannot read whole, so no readable
    answer changes, and grades the rest: a label never adds to the number.

    >>> unlabelled("B200 at FP8: 12.3 ms", []), unlabelled("flash 0.0446", ["flash"])
    ('12.3 ms', '0.0446')
    >>> unlabelled("about 1, 234 tokens", []), unlabelled("fast 24 ms", ["flash"])
    (None, None)
    """
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    t, changed = text.strip(WHITESPACE), False
    for _ in range(MAX_LABELS):
        m = LABEL.match(t)
        if m and not PLAIN_NUMBER.fullmatch(m.group(1).strip(" ").split(" ")[-1]):
            t, changed = t[m.end() :], True
            continue
        rest, named = t, False
        while word := LABEL_WORD.match(rest):
            w = re.sub(r"^[()]+|[()]+$", "", word.group(1).lower())
            if w in labels:
                named = True
            elif w not in LABEL_FILLERS:
                break
            rest = rest[word.end() :]
        if not named:
            break
        t, changed = rest, True
    return t if changed else None


def _is_count(spec: dict) -> bool:
    """Whether the answer is a count (parameters, tokens, sequences, chips, or a pure number):
    no dimension but tokens or sequences, at most one thing counted, none per another."""
    dims, counts = spec["dims"], spec.get("counts") or {}
    if any(dims[:TOKEN]) or any(d not in (0, 1) for d in dims[TOKEN:]):
        return False
    return all(p == 1 for p in counts.values()) and sum(dims[TOKEN:]) + len(counts) <= 1


def _is_money(spec: dict) -> bool:
    """Whether the answer is an amount of money (a cost in dollars, nothing per anything)."""
    dims = spec["dims"]
    return not spec.get("counts") and all(d == (k == CURRENCY) for k, d in enumerate(dims))


def _is_memory(spec: dict) -> bool:
    """Whether the answer is an amount of memory (data, per anything or not), with no time,
    compute or cost in it: its factor slips are bytes and copies, never FLOPs."""
    dims = spec["dims"]
    return bool(dims[DATA]) and not (dims[TIME] or dims[COMPUTE] or dims[CURRENCY])


def _pure(spec: dict) -> bool:
    """A pure number: no dimension, nothing counted (a count of chips takes only chips)."""
    return not any(spec["dims"]) and not spec.get("counts")


def _is_sequences(got: dict) -> bool:
    return all(d == (1 if k == SEQUENCE else 0) for k, d in enumerate(got["dims"]))


def _per_unsaid(got, want, k: int) -> bool:
    """Whether ``got`` is ``want`` without its "per" dimension ``k`` (SEQUENCE or TOKEN).

    Per sequence: the question asks for each sequence's share ("how many tokens per second does
    each sequence get?", "how long a context?"), so "86 tokens/s" or "49,200 tokens" is that
    sequence's (not "86 tokens/s per chip", which says what it is per: the caller checks that no
    count is named). Per token: a price typed "$0.60/M" names the million but not the tokens, as
    price lists write it (the caller checks that a scale stood alone under the line)."""
    if want[k] != -1 or got[k] != 0:
        return False
    return all(abs(g - w) <= 1e-9 for i, (g, w) in enumerate(zip(got, want, strict=True)) if i != k)


def _nearest(mistakes: list, value: float, spec: dict):
    """The listed mistake closest to ``value`` (by ratio) among those whose window holds it."""
    best, gap = None, math.inf
    for m in mistakes:
        if _within(value, [m["value"]], spec):
            same = value == m["value"]  # a mistake of 0, typed as 0
            ratio = 1.0 if same else max(value / m["value"], m["value"] / value)
            if ratio < gap:
                best, gap = m, ratio
    return best


def _in_unit(spec: dict) -> str:
    return f" (in {spec['said']})" if spec.get("said") else ""


def _verdict(kind: str, message: str) -> dict:
    return {"ok": kind == "right", "kind": kind, "message": message}
