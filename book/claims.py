"""The claims audit: every quantitative claim of the lecture and its summaries, recomputed.

Claims live in ``book/claims.toml``: what was said, by whom, the figure with its unit, a
tolerance, and the cases (presets and the claim's own assumptions) to compute it on. The verdict
is computed, so a preset change updates it, by one rule (:func:`verdict_of`): every case within
the claim's standard, *holds*; some, *partly holds*; none, but the claim's own arithmetic
redone on its own premise lands (its ``premise_cases``), *premise wrong, method right*; else
*wrong*.

>>> audit = audit_claims()
>>> audit["rubin_drain"].verdict
'holds'
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pint

import derivations
from book.format import given_text, number, quantity
from derivations.inputs import reachable
from units import ChalkboardError, parse_quantity
from units.presets import Presets, load

CLAIMS = Path(__file__).with_name("claims.toml")
VERDICTS = ("holds", "partly holds", "premise wrong, method right", "wrong")
PRECISIONS = ("weight_precision", "kv_precision", "compute_precision")  # each defaults to precision
CHOICES = ("hardware", "model", "precision", *PRECISIONS, "price", "api", "tier", "fit")


@dataclass(frozen=True)
class Case:
    """One computation of a claim: a label and the value it gives."""

    label: str
    value: pint.Quantity
    in_range: bool


@dataclass(frozen=True)
class Verdict:
    id: str
    chapter: str
    said_by: str
    claim: str
    expected: str
    cases: tuple[Case, ...]
    verdict: str
    caveat: str
    note: str
    equation: str
    judged: str = ""  # the standard: its tolerance and the reason for it
    premise: str = ""  # the claim's own premise, where it states one
    premise_cases: tuple[Case, ...] = ()  # its arithmetic redone on that premise


def verdict_of(cases, premise_cases=()) -> str:
    """The one verdict rule, from which cases land within the claim's standard: all of them,
    'holds'; some, 'partly holds' (a case that misses may miss by any factor, so no mere
    caveat); none, 'premise wrong, method right' when the claim's
    arithmetic redone on its own premise lands (every premise case), else 'wrong'.

    >>> from types import SimpleNamespace as S
    >>> verdict_of([S(in_range=True), S(in_range=False)])
    'partly holds'
    >>> verdict_of([S(in_range=False)], [S(in_range=True)])
    'premise wrong, method right'
    >>> verdict_of([S(in_range=False)], [S(in_range=False)])
    'wrong'
    """
    hits = sum(c.in_range for c in cases)
    if hits == len(cases):
        return VERDICTS[0]
    if hits:
        return VERDICTS[1]
    if premise_cases and all(c.in_range for c in premise_cases):
        return VERDICTS[2]
    return VERDICTS[3]


def _range(raw: dict, where: str) -> tuple[pint.Quantity, pint.Quantity | None]:
    if "expected" in raw:
        q = parse_quantity(raw["expected"], what=f"{where}.expected")
        return q, q
    if "expected_low" not in raw:
        raise ChalkboardError(f"{where}: needs expected or expected_low")
    low = parse_quantity(raw["expected_low"], what=f"{where}.expected_low")
    high = raw.get("expected_high")
    return low, parse_quantity(high, what=f"{where}.expected_high") if high else None


def _standard(raw: dict, standards: dict, where: str) -> dict:
    """The standard a claim is judged by; its tolerance is the standard's, never its own."""
    own = {"tolerance", "within_factor"} & set(raw)
    if own:
        raise ChalkboardError(f"{where}: {sorted(own)[0]} is set by the claim's standard")
    name = raw.get("standard")
    if name not in standards:
        close = difflib.get_close_matches(str(name), standards, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f"; known: {', '.join(standards)}"
        raise ChalkboardError(f"{where}: unknown standard {name!r}{hint}")
    return standards[name]


def judged_text(standard: dict) -> str:
    """The tolerance as a reader says it, with its reason.

    >>> judged_text({"within_factor": 3.16, "reason": "a rough guess"})
    'within a factor of 3.16 either way: a rough guess'
    >>> judged_text({"tolerance": 0.25, "reason": "said as about"})
    'within ±25%: said as about'
    """
    if "within_factor" in standard:
        band = f"within a factor of {number(standard['within_factor'], 3)} either way"
    elif standard.get("tolerance", 0):
        band = f"within ±{number(100 * standard['tolerance'])}%"
    else:
        band = "exactly as stated"
    return f"{band}: {standard['reason']}"


def _bounds(raw: dict, low, high):
    """The accepted interval, widened by the standard's tolerance or factor."""
    factor = raw.get("within_factor")
    tol = raw.get("tolerance", 0.0)
    lo = low / factor if factor else low * (1 - tol)
    hi = None if high is None else (high * factor if factor else high * (1 + tol))
    return lo, hi


def _evaluate(raw_case: dict, equation: str, presets: Presets, where: str) -> tuple[str, object]:
    choices = {k: raw_case[k] for k in CHOICES if k in raw_case}
    overrides = dict(raw_case.get("set", {}))
    unknown = set(raw_case) - {*CHOICES, "set", "over", "computed", "equation", "times"}
    if unknown:
        raise ChalkboardError(f"{where}: unknown case field {sorted(unknown)[0]!r}")
    for name, other in raw_case.get("computed", {}).items():  # an input from another equation
        overrides[name] = derivations.get(other).evaluate(presets=presets, **choices)
    equation = raw_case.get("equation", equation)  # a premise case may redo another relation
    value = derivations.get(equation).evaluate(presets=presets, **choices, **overrides)
    label = ", ".join(
        f"{k.replace('_precision', '')} {str(v).upper()}"
        if k in PRECISIONS
        else _preset_name(k, v, presets)
        for k, v in choices.items()
    )
    label = label or "the lecture's figures"
    if overrides:
        label += " with " + ", ".join(given_text(k, v) for k, v in overrides.items())
    if "over" in raw_case:
        other = derivations.get(raw_case["over"])
        # the reference takes the givens it reads (a floor has no batch, nor a context)
        reads = reachable(other)
        reference = {k: v for k, v in overrides.items() if k != "batch_size" and k in reads}
        value = value / other.evaluate(presets=presets, **choices, **reference)
        label += f", over the {other.title[:1].lower() + other.title[1:]}"
    if "times" in raw_case:  # a factor the claim itself states (the lecture's sparsity of 8)
        factor = float(raw_case["times"])
        value = value * factor
        label += f", times the lecture's {number(factor, 3)}"
    return label, value


def _preset_name(kind: str, preset_id: str, presets: Presets) -> str:
    """A preset as a reader knows it: 'NVIDIA H100 SXM', 'FP8'."""
    if kind == "precision":
        return str(preset_id).upper()
    try:
        return presets.get(kind, preset_id).name
    except (ChalkboardError, KeyError):
        return str(preset_id)


def judge(raw: dict, claim_id: str, presets: Presets, standards: dict) -> Verdict:
    where = f"{CLAIMS.name}: claim.{claim_id}"
    standard = _standard(raw, standards, where)
    low, high = _range(raw, where)
    lo, hi = _bounds(standard, low, high)

    def computed(key: str) -> tuple[Case, ...]:
        out = []
        for i, raw_case in enumerate(raw.get(key, ())):
            label, value = _evaluate(raw_case, raw["equation"], presets, f"{where}.{key}[{i}]")
            v = value.to(low.units) if value.dimensionality == low.dimensionality else None
            if v is None:
                raise ChalkboardError(
                    f"{where}: {raw['equation']} gives {value.dimensionality}, "
                    f"but the claim is in {low.units}"
                )
            ok = bool(v >= lo) and (hi is None or bool(v <= hi))
            out.append(Case(label, v, ok))
        return tuple(out)

    if bool(raw.get("premise")) != bool(raw.get("premise_cases")):
        raise ChalkboardError(f"{where}: a premise needs premise_cases, and the reverse")
    cases, premise_cases = computed("cases"), computed("premise_cases")
    hits = sum(c.in_range for c in cases)
    verdict = verdict_of(cases, premise_cases)
    caveat = raw.get("caveat", "")
    if 0 < hits < len(cases):
        misses = "; ".join(
            f"{c.label} ({number(c.value.m, 3)}, "
            + (f"under {number(lo.to(c.value.units).m, 3)})" if c.value < lo else "")
            + (f"over {number(hi.to(c.value.units).m, 3)})" if c.value >= lo else "")
            for c in cases
            if not c.in_range
        )
        caveat = (caveat + "; " if caveat else "") + f"not for {misses}"
    if high is None:
        expected = f"at least {quantity(low)}"
    elif high is low:
        expected = quantity(low)
    else:
        expected = f"{quantity(low)} to {quantity(high)}"
    return Verdict(
        claim_id,
        raw["chapter"],
        raw["said_by"],
        raw["claim"],
        expected,
        tuple(cases),
        verdict,
        caveat,
        raw.get("note", ""),
        raw["equation"],
        judged_text(standard),
        raw.get("premise", ""),
        premise_cases,
    )


def audit_claims(presets: Presets | None = None, path: Path = CLAIMS) -> dict[str, Verdict]:
    """Every claim's verdict, by id."""
    presets = presets or load()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ChalkboardError(f"{path}: cannot read claims: {err}") from None
    standards = data.get("standard", {})
    return {cid: judge(raw, cid, presets, standards) for cid, raw in data["claim"].items()}


# The published summaries of the episode (../shared/seeds/), named as a reader finds them.
SUMMARIES = {
    "000": "the episode page's timestamped summary (Dwarkesh Podcast)",
    "001": 'the AI-generated "Key Takeaways" summary',
    "002": 'the "AI Summary" with notable quotes',
    "003": "the episode's transcript page",
    "004": 'the "Predictions" and "Mental models" summary',
}
_SEEDS = re.compile(r"seed summar(?:y|ies) ((?:\d{3})(?:(?:, | and )\d{3})*)")


def reader_source(said_by: str) -> str:
    """``said_by`` with the summaries named by title, never by internal file number; "lecture"
    is the episode.

    >>> print(reader_source("lecture, section A; seed summary 001"))
    the lecture (the episode), section A; the AI-generated "Key Takeaways" summary
    """

    def titles(m: re.Match) -> str:
        numbers = re.findall(r"\d{3}", m[1])
        return " and ".join(SUMMARIES.get(n, "a published summary") for n in numbers)

    text = _SEEDS.sub(titles, said_by)
    return re.sub(r"^lecture\b", "the lecture (the episode)", text)


def claims_context(presets: Presets | None = None) -> dict:
    """The audit page: claims grouped by chapter, with their computed figures."""
    from book.context import equation_link

    audit = audit_claims(presets)
    chapters = []
    for chapter in derivations.CHAPTERS:
        rows = [
            {
                "id": v.id,
                "claim": v.claim,
                "said_by": reader_source(v.said_by),
                "expected": v.expected,
                "computed": "; ".join(f"{quantity(c.value)} ({c.label})" for c in v.cases),
                "verdict": v.verdict,
                "judged": v.judged,
                "premise": v.premise,
                "premise_computed": "; ".join(
                    f"{quantity(c.value)} ({c.label})" for c in v.premise_cases
                ),
                "caveat": v.caveat,
                "note": v.note,
                "equation": equation_link(derivations.get(v.equation), "claims.md"),
            }
            for v in audit.values()
            if v.chapter == chapter.id
        ]
        if rows:
            chapters.append({"title": chapter.title, "id": chapter.id, "rows": rows})
    counts = {name: sum(v.verdict == name for v in audit.values()) for name in VERDICTS}
    data = tomllib.loads(CLAIMS.read_text(encoding="utf-8"))
    standards = [
        {"name": name, "text": judged_text(std)} for name, std in data.get("standard", {}).items()
    ]
    return {"chapters": chapters, "counts": counts, "total": len(audit), "standards": standards}
