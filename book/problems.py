"""Parametric practice problems drawn from a seed, with full worked solutions.

A problem picks an equation of a chapter and presets (and workload inputs) from a seeded random
generator, states its givens with units, and solves it from the equation's intermediates, every
number shown. Three kinds: *forward* (evaluate), *inverse* (solve for an input, via
``solve_for``) and *estimate* (the answer's order of magnitude).

>>> a = problem_set("batching", seed=7, count=3)
>>> b = problem_set("batching", seed=7, count=3)
>>> [p.id for p in a] == [p.id for p in b]
True
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import pint
import sympy as sp

import derivations
from book.cases import precision_words
from book.format import markdown_text, number, quantity
from derivations.core import Equation
from derivations.inputs import BINDINGS, reachable
from units import Q_, ChalkboardError
from units.presets import Presets, load

# Workload inputs with no preset or default, drawn from these values when a problem needs them.
DRAWS = {
    "batch_size": [Q_(b, "sequence") for b in (1, 16, 64, 256, 1024, 4096)],
    "training_flops": [Q_(c, "FLOP") for c in (1e22, 3e23, 1e24, 5e24, 2e25)],
    "training_tokens": [Q_(d, "token") for d in (1.4e12, 15e12, 36e12)],
    "cost_product": [Q_(k, "FLOP**2") for k in (1e48, 4e50)],
}
PRESET_KINDS = ("hardware", "model", "api", "tier", "fit")
PRECISIONS = ("bf16", "fp8")
RELATIVE_TOLERANCE = 0.01
MAX_COUNT = 200  # problems per chapter in one set
ESTIMATE_FACTOR = math.sqrt(10)


@dataclass(frozen=True)
class Given:
    name: str
    latex: str
    meaning: str
    value: pint.Quantity
    origin: str

    @property
    def text(self) -> str:
        return quantity(self.value)


@dataclass(frozen=True)
class Problem:
    id: str
    chapter: str
    kind: str
    equation: str
    text: str
    givens: tuple[Given, ...]
    answer: pint.Quantity
    solution: tuple[str, ...]
    tolerance: float = RELATIVE_TOLERANCE
    mode: str = "relative"  # or "factor" for an order-of-magnitude estimate
    choices: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "chapter": self.chapter,
            "kind": self.kind,
            "equation": self.equation,
            "text": self.text,
            "givens": [
                {"name": g.name, "value": float(g.value.magnitude), "unit": f"{g.value.units:~}"}
                for g in self.givens
            ],
            "answer": {"value": float(self.answer.magnitude), "unit": f"{self.answer.units:~}"},
            "tolerance": {"mode": self.mode, "value": self.tolerance},
            "solution": list(self.solution),
        }


def _candidates(chapter: str) -> list[Equation]:
    return [
        e
        for e in derivations.equations(chapter)
        if e.evaluable and not isinstance(e.rhs, sp.Symbol) and not e.solved_from
    ]


def _kinds_needed(eq: Equation) -> list[str]:
    names = reachable(eq)
    kinds = {BINDINGS[n].preset for n in names if n in BINDINGS and BINDINGS[n].preset}
    return [k for k in PRESET_KINDS if k in kinds]


def _draw(eq: Equation, rng: random.Random, presets: Presets) -> dict | None:
    """Preset choices and workload inputs under which ``eq`` evaluates, or None."""
    names = reachable(eq)
    for _ in range(25):
        kw = {kind: rng.choice(presets.ids(kind)) for kind in _kinds_needed(eq)}
        if "flops" in names:
            kw["precision"] = rng.choice(PRECISIONS)
        for name, values in DRAWS.items():
            if name in names and derivations.defining(name) is None:
                binding = BINDINGS.get(name)
                if binding is None or binding.preset not in kw:
                    kw[name] = rng.choice(values)
        try:
            value = eq.evaluate(presets=presets, **kw).magnitude
        except ChalkboardError:
            continue
        if math.isfinite(value) and value > 0:  # a dense model has no all-to-all: draw again
            return kw
    return None


def _leaves(result) -> list[Given]:
    out = []
    for name, i in result.inputs.items():
        if i.origin.startswith("equation") or i.symbol is None:
            continue
        s = i.symbol
        out.append(Given(name, s.latex, s.meaning, i.value, i.origin))
    return out


def _solution(eq: Equation, result) -> list[str]:
    """Intermediates bottom-up, then the equation, each with its number."""
    lines = []
    for name, i in reversed(list(result.inputs.items())):
        inner = derivations.defining(name)
        if inner is not None and i.origin.startswith("equation"):
            lines.append(f"${inner.latex()}$ = {quantity(i.value)}")
    lines.append(f"${eq.latex()}$ = **{quantity(result.value)}**")
    return lines


def _describe(kw: dict, presets: Presets) -> str:
    parts = [presets.get(k, v).name for k, v in kw.items() if k in PRESET_KINDS]
    if "precision" in kw:
        parts.append(f"{precision_words(kw)} precision")
    return ", ".join(parts)


def _make(eq: Equation, kind: str, kw: dict, presets: Presets, pid: str) -> Problem | None:
    result = eq.evaluate_detailed(presets=presets, **kw)
    givens = _leaves(result)
    if any(not g.value.magnitude > 0 for g in givens):  # e.g. a dense model's zero experts
        return None
    setting = _describe(kw, presets)
    where = f" for {setting}" if setting else ""
    if kind == "inverse":
        options = [g for g in givens if g.value.dimensionality and g.origin != "constant"]
        try:
            if not options:
                return None
            target = options[len(pid) % len(options)]
            solved = eq.solve_for(target.name)
        except ChalkboardError:
            return None
        output = Given(eq.lhs.name, eq.lhs.latex, eq.lhs.meaning, result.value, "required")
        rest = tuple(g for g in givens if g.name != target.name) + (output,)
        answer = target.value
        text = (
            f"{markdown_text(eq.title)}{where}: what {target.meaning} (${target.latex}$) "
            "would make "
            f"{eq.lhs.meaning} (${eq.lhs.latex}$) equal {quantity(result.value)}?"
        )
        solution = (
            f"Solve ${eq.latex()}$ for ${target.latex}$: ${solved.latex()}$.",
            f"With the givens: ${target.latex}$ = **{quantity(answer)}**.",
        )
        return Problem(pid, eq.chapter, kind, solved.id, text, rest, answer, solution, choices=kw)
    solution = tuple(_solution(eq, result))
    if kind == "estimate":
        magnitude = result.value.magnitude
        power = round(math.log10(magnitude))
        answer = Q_(10.0**power, result.value.units)
        unit_name = quantity(Q_(1, result.value.units)).removeprefix("1").strip()
        in_unit = f", in {unit_name}" if unit_name else ""
        text = (
            f"Estimate, to the nearest power of ten, {eq.lhs.meaning} (${eq.lhs.latex}$){where}"
            f"{in_unit}."
        )
        solution = (*solution, f"To the nearest power of ten: **{quantity(answer)}**.")
        return Problem(
            pid,
            eq.chapter,
            kind,
            eq.id,
            text,
            tuple(givens),
            answer,
            solution,
            tolerance=ESTIMATE_FACTOR,
            mode="factor",
            choices=kw,
        )
    text = f"{markdown_text(eq.title)}{where}: find {eq.lhs.meaning} (${eq.lhs.latex}$)."
    return Problem(
        pid, eq.chapter, kind, eq.id, text, tuple(givens), result.value, solution, choices=kw
    )


def problem_set(
    chapter: str | None = None, seed: int = 0, count: int = 5, presets: Presets | None = None
) -> list[Problem]:
    """``count`` problems per chapter (or of one chapter), the same for the same seed."""
    presets = presets or load()
    chapters = [c.id for c in derivations.CHAPTERS]
    if chapter is not None and chapter not in chapters:
        from units import closest

        raise ChalkboardError(f"unknown chapter {chapter!r}{closest(chapter, chapters)}")
    if not 1 <= count <= MAX_COUNT:
        raise ChalkboardError(f"--count must be from 1 to {MAX_COUNT}")
    out = []
    for ch in [chapter] if chapter else chapters:
        rng = random.Random(f"{seed}:{ch}")
        candidates = _candidates(ch)
        if not candidates:  # e.g. a user's chapter of symbolic equations only
            continue
        made, attempts, unused = 0, 0, list(candidates)
        while made < count and attempts < 20 * count:
            attempts += 1
            eq = rng.choice(unused or candidates)  # every equation once before any twice
            if eq in unused:
                unused.remove(eq)
            kind = rng.choice(("forward", "forward", "inverse", "estimate"))
            kw = _draw(eq, rng, presets)
            if kw is None:
                continue
            problem = _make(eq, kind, kw, presets, f"{ch}-{seed}-{made + 1}")
            if problem is not None:
                out.append(problem)
                made += 1
    return out


def givens_text(p: Problem) -> str:
    return "; ".join(f"${g.latex}$ ({g.meaning}) = {g.text}" for g in p.givens)


def tolerance_text(p: Problem) -> str:
    if p.mode == "factor":
        return f"within a factor of {number(p.tolerance, 3)}"
    return f"within {number(100 * p.tolerance)}%"


# -- the answer checker's unit table ---------------------------------------------------------

DIMENSIONS = ("[time]", "[information]", "[compute]", "[currency]")
UNIT_NAMES = (
    "s",
    "second",
    "sec",
    "min",
    "minute",
    "h",
    "hr",
    "hour",
    "d",
    "day",
    "week",
    "month",
    "yr",
    "year",
    "B",
    "byte",
    "b",
    "bit",
    "FLOP",
    "flop",
    "USD",
    "dollar",
    "token",
    "tok",
    "parameter",
    "param",
    "sequence",
    "seq",
    "chip",
    "gpu",
    "value",
    "val",
    "expert",
    "layer",
    "head",
    "stage",
    "rack",
)
PREFIXES = {
    "n": 1e-9,
    "µ": 1e-6,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Z": 1e21,
    "Y": 1e24,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
}


def dims_vector(q: pint.Quantity) -> list[float]:
    d = q.dimensionality
    return [float(d.get(name, 0)) for name in DIMENSIONS]


def unit_table() -> dict:
    """Every unit name the answer checker accepts: its factor to base units and its dimensions,
    read from the project's own pint registry (so the browser and Python agree)."""
    units = {}
    for name in UNIT_NAMES:
        q = Q_(1, name).to_base_units()
        units[name] = [float(q.magnitude), dims_vector(q)]
    return {"units": units, "prefixes": PREFIXES}


def answer_spec(p: Problem) -> dict:
    """What the checker compares against: the answer in base units, its dimensions, tolerance."""
    base = p.answer.to_base_units()
    return {
        "value": float(base.magnitude),
        "dims": dims_vector(base),
        "tolerance": p.tolerance,
        "mode": p.mode,
        "unit": f"{p.answer.units:~P}",
    }


# -- the site's pages ------------------------------------------------------------------------

PROBLEM_SEED = 0  # the site's problem sets; the CLI draws others
PROBLEMS_PER_CHAPTER = 6


def problem_pages(presets: Presets) -> dict:
    """One problem set per chapter plus an index: output path -> (template, context)."""
    import json

    pages, per_chapter = {}, []
    for chapter in derivations.CHAPTERS:
        problems = [
            {
                "id": p.id,
                "kind": p.kind,
                "text": p.text,
                "givens": [
                    {"latex": g.latex, "meaning": g.meaning, "value": g.text} for g in p.givens
                ],
                "answer_json": json.dumps(answer_spec(p)),
                "example": f"2.5 {p.answer.units:~P}".strip(),
                "tolerance": tolerance_text(p),
                "solution": list(p.solution),
            }
            for p in problem_set(chapter.id, PROBLEM_SEED, PROBLEMS_PER_CHAPTER, presets)
        ]
        pages[f"problems/{chapter.id}.md"] = (
            "problems/chapter.md.j2",
            {"chapter": chapter, "problems": problems, "seed": PROBLEM_SEED},
        )
        per_chapter.append({"id": chapter.id, "title": chapter.title, "count": len(problems)})
    pages["problems/index.md"] = (
        "problems/index.md.j2",
        {
            "chapters": per_chapter,
            "factor": number(ESTIMATE_FACTOR, 3),
            "tolerance": f"{number(100 * RELATIVE_TOLERANCE)}%",
        },
    )
    return pages
