"""Practice problems: the authored problems of :mod:`book.problem_bank`, and a formula drill.

The practice problems of the site, the CLI and the exports are *authored*: each is one small file
in ``book/problem_bank/<chapter>/`` whose ``draw`` a person wrote (scenario, question, reasoning,
likely mistakes); :func:`problem_set` turns each into a :class:`Problem` per seed, its numbers
drawn from a ``random.Random`` seeded with the seed and the problem's id, so a problem is the
same for the same seed whatever else is in the set.

The *formula drill* (:func:`drill_set`, ``chalkboard problems --drill``) is the older generator:
it picks an equation of a chapter and presets from a seeded random generator, states its givens
with units, and solves it from the equation's intermediates, every number shown. Its kinds:
*forward* (evaluate), *multi* (a chain of equations), *inverse* (solve for an input, via
``solve_for``), *estimate* (the answer's order of magnitude), *design* (a search of the presets)
and *concept* (the concept cards as questions).

>>> [p.id for p in problem_set("batching", seed=7)][:1]
['batching.choose_server_for_speed']
>>> a = drill_set("batching", seed=7, count=3)
>>> [p.id for p in a] == [p.id for p in drill_set("batching", seed=7, count=3)]
True
"""

from __future__ import annotations

import dataclasses
import math
import random
import tomllib
import types
from dataclasses import dataclass, field

import pint
import sympy as sp

import derivations
from book import lecture
from book import problem_bank as bank
from book.cases import precision_words
from book.checker import answer_spec, dims_vector, unit_table  # noqa: F401 - re-exported
from book.format import markdown_text, named, number, quantity
from derivations.core import Equation
from derivations.inputs import BINDINGS, reachable
from units import Q_, ChalkboardError, reads
from units.presets import Presets, load
from units.registry import is_count

# Workload inputs with no preset or default, drawn from these values when a problem needs them.
DRAWS = {
    "batch_size": [Q_(b, "sequence") for b in (1, 16, 64, 256, 1024, 4096)],
    "training_flops": [Q_(c, "FLOP") for c in (1e22, 3e23, 1e24, 5e24, 2e25)],
    "training_tokens": [Q_(d, "token") for d in (1.4e12, 15e12, 36e12)],
    "cost_product": [Q_(k, "FLOP**2") for k in (1e48, 4e50)],
    # the validation chapter's serving and training workloads (measurements.toml's range)
    "input_tokens": [Q_(n, "token") for n in (128, 512, 2048, 8192)],
    "input_output_ratio": [Q_(r, "") for r in (0.5, 1.78, 4, 10)],
    "training_sequence": [Q_(n, "token") for n in (2048, 4096, 8192)],
    "measured_rate": [Q_(r, "token/s/chip") for r in (50, 500, 2000)],
}
PRESET_KINDS = ("hardware", "model", "api", "tier", "fit")
PRECISIONS = ("bf16", "fp8")
RELATIVE_TOLERANCE = 0.01
MAX_COUNT = 200  # problems per chapter in one set
ESTIMATE_FACTOR = math.sqrt(10)
KINDS = ("forward", "multi", "inverse", "estimate", "design", "concept")
MAX_CHAIN = 4  # equations in a multi-step problem, at most
RETRIES = 10  # failed draws of one planned kind before the plan moves on
# Deductions from API prices: the lecture's price-kink and output/input-ratio arguments.
PRICE_DEDUCTIONS = (
    "kv_bytes_from_price_kink",
    "decode_prefill_ratio_from_prices",
    "cache_discount_from_prices",
)


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
    answer: pint.Quantity | None  # None for a concept problem (its answer is prose)
    solution: tuple[str, ...]
    tolerance: float = RELATIVE_TOLERANCE
    mode: str = "relative"  # "factor" for an estimate, "prose" for a concept problem
    choices: dict = field(default_factory=dict)
    hint: str = ""
    # an authored problem's: its title, the equations its reasoning uses, the lecture's moment
    # (seconds into the video), likely mistakes, and a design problem's margin to the next choice
    title: str = ""
    uses: tuple[str, ...] = ()
    lecture: int | None = None
    mistakes: tuple = ()
    margin: float | None = None

    def to_dict(self) -> dict:
        authored = {
            "title": self.title,
            "uses": list(self.uses),
            "lecture": self.lecture,
            "mistakes": [
                {"value": float(m.value.magnitude), "unit": f"{m.value.units:~}", "why": m.why}
                for m in self.mistakes
            ],
        }
        return {
            "id": self.id,
            "chapter": self.chapter,
            "kind": self.kind,
            "equation": self.equation,
            **(authored if self.title else {}),
            "text": self.text,
            "givens": [
                {"name": g.name, "value": float(g.value.magnitude), "unit": f"{g.value.units:~}"}
                for g in self.givens
            ],
            "answer": None
            if self.answer is None
            else {"value": float(self.answer.magnitude), "unit": f"{self.answer.units:~}"},
            "tolerance": {"mode": self.mode, "value": self.tolerance},
            "solution": list(self.solution),
        } | ({"hint": self.hint} if self.hint else {})


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


# Inputs computed by a rule rather than given: shown as a step of the solution, never a given.
DERIVED = {"n_chips": "chips_to_fit"}


def _leaves(result) -> list[Given]:
    out = []
    for name, i in result.inputs.items():
        derived = name in DERIVED and i.origin != "given"
        if i.origin.startswith("equation") or i.symbol is None or derived:
            continue
        s = i.symbol
        out.append(Given(name, s.latex, s.meaning, i.value, i.origin))
    return out


def chain(result) -> list[str]:
    """The other equations an evaluation went through, bottom-up (each once)."""
    ids = []
    for i in reversed(list(result.inputs.values())):
        if i.origin.startswith("equation"):
            eq_id = i.origin.split()[1]
            if eq_id not in ids:
                ids.append(eq_id)
    return ids


def _solution(eq: Equation, result) -> list[str]:
    """Every intermediate bottom-up with its unit, then the equation, each with its number."""
    lines = []
    for name, i in reversed(list(result.inputs.items())):
        inner = derivations.defining(name)
        if i.origin.startswith("equation"):
            inner = derivations.get(i.origin.split()[1])
            lines.append(f"${inner.latex()}$ = {quantity(i.value)}")
        elif name in DERIVED and i.origin != "given":
            lines.append(f"${i.symbol.latex}$ ({i.origin}) = {quantity(i.value)}")
    lines.append(f"${eq.latex()}$ = **{quantity(result.value)}**")
    return lines


def _describe(kw: dict, presets: Presets) -> str:
    parts = [presets.get(k, v).name for k, v in kw.items() if k in PRESET_KINDS]
    if "precision" in kw:
        parts.append(f"{precision_words(kw)} precision")
    return ", ".join(parts)


def _unit_words(q: pint.Quantity) -> str:
    return quantity(Q_(1, q.units)).removeprefix("1").strip()


def _make(eq: Equation, kind: str, kw: dict, presets: Presets, pid: str) -> Problem | None:
    result = eq.evaluate_detailed(presets=presets, **kw)
    givens = _leaves(result)
    if any(not g.value.magnitude > 0 for g in givens):  # e.g. a dense model's zero experts
        return None
    steps = chain(result)
    if kind == "forward" and steps:
        return None
    if kind == "multi" and not 1 <= len(steps) <= MAX_CHAIN - 1:
        return None
    setting = _describe(kw, presets)
    where = f" for {setting}" if setting else ""
    if kind == "inverse" and eq.id in PRICE_DEDUCTIONS:
        api = presets.get("api", kw["api"]).name if "api" in kw else "the lecture's API"
        text = (
            f"From {api}'s published prices{where.replace(f' for {api}', '', 1)}, deduce "
            f"{eq.lhs.meaning} {named(eq.lhs.latex)}."
        )
        solution = tuple(_solution(eq, result))
        return Problem(
            pid, eq.chapter, kind, eq.id, text, tuple(givens), result.value, solution, choices=kw
        )
    if kind == "inverse":
        # solve for a physical input (bytes, FLOP/s, USD, ...), never a count: counts were
        # dimensionless before tokens and sequences became dimensions, and stay out
        options = [g for g in givens if not is_count(g.value.units) and g.origin != "constant"]
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
            f"{markdown_text(eq.title)}{where}: what {target.meaning} {named(target.latex)} "
            "would make "
            f"{eq.lhs.meaning} {named(eq.lhs.latex)} equal {quantity(result.value)}?"
        )
        solution = (
            f"Solve ${eq.latex()}$ for ${target.latex}$: ${solved.latex()}$.",
            f"With the givens: ${target.latex}$ = **{quantity(answer)}**.",
        )
        return Problem(pid, eq.chapter, kind, solved.id, text, rest, answer, solution, choices=kw)
    solution = tuple(_solution(eq, result))
    if kind == "estimate":
        low, high = result.value / ESTIMATE_FACTOR, result.value * ESTIMATE_FACTOR
        unit_name = _unit_words(result.value)
        in_unit = f", in {unit_name}" if unit_name else ""
        text = (
            f"Estimate {eq.lhs.meaning} {named(eq.lhs.latex)}{where}{in_unit}. Any answer within a "
            f"factor of {number(ESTIMATE_FACTOR, 3)} of the true value is accepted."
        )
        solution = (
            *solution,
            f"Accepted: from {quantity(low)} to {quantity(high)} (the true value over and times "
            f"{number(ESTIMATE_FACTOR, 3)}).",
        )
        return Problem(
            pid,
            eq.chapter,
            kind,
            eq.id,
            text,
            tuple(givens),
            result.value,  # graded on the true value, within the factor
            solution,
            tolerance=ESTIMATE_FACTOR,
            mode="factor",
            choices=kw,
        )
    if kind == "multi":
        titles = [derivations.get(i).lhs for i in steps]
        via = ", then ".join(f"{s.meaning} {named(s.latex)}" for s in titles)
        text = (
            f"{markdown_text(eq.title)}{where}: find {eq.lhs.meaning} {named(eq.lhs.latex)}. "
            f"It takes {len(steps) + 1} equations: first {via}."
        )
    else:
        text = f"{markdown_text(eq.title)}{where}: find {eq.lhs.meaning} {named(eq.lhs.latex)}."
    return Problem(
        pid, eq.chapter, kind, eq.id, text, tuple(givens), result.value, solution, choices=kw
    )


# -- design problems: the engine searches the presets ----------------------------------------

DESIGN = {
    # chapter: models drawn from, hardware searched, the step-time bound's named parameter
    "batching": (
        ("deepseek_v3", "llama_3_1_70b", "qwen3_235b_a22b", "kimi_k2"),
        ("h100_sxm", "h200", "b200", "mi300x"),
    ),
    "moe": (("deepseek_v3", "kimi_k2", "qwen3_235b_a22b"), ("gb200_nvl72", "gb300_nvl72")),
}
DESIGN_BATCHES = (64, 256, 1024, 4096)


def design_search(model: str, hardware: tuple, bound: pint.Quantity, presets: Presets) -> list:
    """Every (hardware, precision, batch) for ``model`` with its step time and cost per token,
    cheapest first; those over the step-time ``bound`` marked infeasible."""
    rows = []
    for hw in hardware:
        for precision in PRECISIONS:
            for b in DESIGN_BATCHES:
                kw = dict(hardware=hw, model=model, precision=precision)
                kw["batch_size"] = Q_(b, "sequence")
                try:
                    r = derivations.get("cost_per_token").evaluate_detailed(presets=presets, **kw)
                except ChalkboardError:
                    continue
                step = r.inputs["step_time"].value
                rows.append(
                    dict(
                        kw,
                        step=step,
                        cost=r.value,
                        chips=r.inputs["n_chips"].value,
                        ok=bool(step <= bound),
                    )
                )
    return sorted(rows, key=lambda row: row["cost"].to("USD/Mtoken").magnitude)


def _design(chapter: str, rng: random.Random, presets: Presets, pid: str) -> Problem | None:
    models, hardware = DESIGN[chapter]
    model = rng.choice(models)
    bound = presets.parameter["train_period"].value
    rows = design_search(model, hardware, bound, presets)
    feasible = [r for r in rows if r["ok"]]
    if not feasible:
        return None
    best = feasible[0]
    names = ", ".join(presets.get("hardware", h).name for h in hardware)
    batches = ", ".join(number(b) for b in DESIGN_BATCHES)
    text = (
        f"Serve {presets.get('model', model).name} so that every decode step takes at most "
        f"{quantity(bound)} (the train period). Choose the chips (among {names}), the precision "
        f"(BF16 or FP8) and the batch (one of {batches} sequences) with the lowest cost per "
        "token, each replica on the fewest chips that hold the weights and the KV cache. "
        "What is that lowest cost per token?"
    )

    def row(r) -> str:
        mark = "" if r["ok"] else " (too slow)"
        return (
            f"{presets.get('hardware', r['hardware']).name}, {r['precision'].upper()}, batch "
            f"{quantity(r['batch_size'])} on {quantity(r['chips'])}: step "
            f"{quantity(r['step'])}, {quantity(r['cost'].to('USD/Mtoken'))}{mark}"
        )

    cheaper = [r for r in rows if r["cost"] < best["cost"]][:3]
    solution = (
        "For each choice, the cost per token is "
        f"${derivations.get('cost_per_token').latex()}$ with the step time "
        f"${derivations.get('step_time').latex()}$; search them all and keep those within "
        "the bound.",
        *(f"Cheaper but over the bound: {row(r)}." for r in cheaper),
        f"Cheapest within the bound: {row(best)}.",
        f"Lowest cost per token: **{quantity(best['cost'].to('USD/Mtoken'))}**.",
    )
    choice = {k: best[k] for k in ("hardware", "model", "precision", "batch_size")}
    givens = (
        Given(
            "train_period",
            derivations.SYMBOLS["train_period"].latex,
            "the step-time bound",
            bound,
            "parameter train_period",
        ),
    )
    return Problem(
        pid,
        chapter,
        "design",
        "cost_per_token",
        text,
        givens,
        best["cost"].to("USD/Mtoken"),
        solution,
        choices=choice,
    )


# -- concept problems: a question, a hint and a full prose answer ------------------------------


def _concepts(chapter: str, presets: Presets) -> list[Problem]:
    """The concept problems of ``chapter``, made from its concept cards (only its own context is
    computed: a drill of one chapter does not compute the other chapters'), kept per chapter for
    the last ``presets`` asked about (a problem set asks per chapter)."""
    global _concepts_made
    if _concepts_made is None or _concepts_made[0] is not presets:
        _concepts_made = (presets, {})
    made = _concepts_made[1]
    if chapter not in made:
        made[chapter] = _chapter_concepts(chapter, presets)
    return list(made[chapter])


_concepts_made: tuple[Presets, dict[str, list[Problem]]] | None = None


def _chapter_concepts(chapter: str, presets: Presets) -> list[Problem]:
    from book.cards import CONCEPTS, concept_cards

    with CONCEPTS.open("rb") as f:
        hints = {e["id"]: e["hint"] for e in tomllib.load(f)["card"] if "hint" in e}
    out: list[Problem] = []
    for card in concept_cards(presets, chapter):
        key = card.id.rsplit(":", 1)[1]
        if key in hints:
            out.append(
                Problem(
                    f"{card.chapter}-concept-{key}",
                    card.chapter,
                    "concept",
                    "",
                    card.front,
                    (),
                    None,
                    (card.back,),
                    mode="prose",
                    hint=hints[key],
                )
            )
    return out


@reads.cached  # it reads presets: kept with its reads (units.reads)
def _makes_multi(chapter: str) -> bool:
    """Whether a drawn case gives a chain of two to four equations: the static count of a
    chain can be shorter than the evaluated one (architecture fields inlined at run time)."""
    presets, rng = load(), random.Random(f"multi:{chapter}")
    for eq in (e for e in _candidates(chapter) if _multi_candidate(e)):
        kw = _draw(eq, rng, presets)
        if kw is not None and _make(eq, "multi", _shorten(eq, kw, presets), presets, "probe"):
            return True
    return False


def supported_kinds(chapter: str) -> tuple[str, ...]:
    """The kinds of problem ``chapter`` can offer."""
    candidates = _candidates(chapter)
    kinds = []
    if any(not _static_chain(e) for e in candidates):
        kinds.append("forward")
    if any(_multi_candidate(e) for e in candidates) and _makes_multi(chapter):
        kinds.append("multi")
    if candidates:
        kinds += ["inverse", "estimate"]
    if chapter in DESIGN:
        kinds.append("design")
    if _has_concepts(chapter):
        kinds.append("concept")
    return tuple(k for k in KINDS if k in kinds)


# Figures a multi-step problem may give instead of deriving (the chip count and a model's KV
# bytes per token), so that its chain stays at two to four equations.
SHORTCUTS = ("n_chips", "kv_bytes_per_token")
SHORTCUT_CHAINS = (
    "chips_to_fit",
    "kv_bytes_per_token",
    "gqa_kv_values_per_token",
    "mla_kv_values_per_token",
    "global_attention_layers",
)


def _static_chain(eq: Equation, shortcuts: bool = False) -> list[str]:
    skip = SHORTCUT_CHAINS if shortcuts else ()
    return [
        n
        for n in reachable(eq)
        if (d := derivations.defining(n)) is not None and d != eq and d.id not in skip
    ]


def _multi_candidate(eq: Equation) -> bool:
    return 1 <= len(_static_chain(eq, shortcuts=True)) < MAX_CHAIN


def _shorten(eq: Equation, kw: dict, presets: Presets) -> dict:
    """``kw`` with the chip count and KV bytes per token given (their evaluated values)."""
    result = eq.evaluate_detailed(presets=presets, **kw)
    extra = {
        n: result.inputs[n].value for n in SHORTCUTS if n in result.inputs and n != eq.lhs.name
    }
    return {**kw, **extra}


def _has_concepts(chapter: str) -> bool:
    from book.cards import CONCEPTS

    with CONCEPTS.open("rb") as f:
        return any(e["chapter"] == chapter and "hint" in e for e in tomllib.load(f)["card"])


# The order kinds are dealt in: multi-step problems first and often (at least 30% of a set).
PLAN = ("multi", "forward", "multi", "inverse", "estimate", "concept", "multi", "design")


def drill_set(
    chapter: str | None = None,
    seed: int = 0,
    count: int = 5,
    presets: Presets | None = None,
    kind: str | None = None,
) -> list[Problem]:
    """The formula drill: ``count`` problems per chapter (or of one chapter, or of one kind),
    each one equation (or a short chain of them) on drawn presets, the same for the same
    seed."""
    presets = presets or load()
    chapters = [c.id for c in derivations.CHAPTERS]
    from units import closest

    if chapter is not None and chapter not in chapters:
        raise ChalkboardError(f"unknown chapter {chapter!r}{closest(chapter, chapters)}")
    if kind is not None and kind not in KINDS:
        raise ChalkboardError(f"unknown kind {kind!r}{closest(kind, list(KINDS))}")
    if not 1 <= count <= MAX_COUNT:
        raise ChalkboardError(f"--count must be from 1 to {MAX_COUNT}")
    out = []
    for ch in [chapter] if chapter else chapters:
        out += _chapter_set(ch, seed, count, presets, kind)
    return out


def _chapter_set(ch: str, seed: int, count: int, presets: Presets, only: str | None) -> list:
    rng = random.Random(f"{seed}:{ch}")
    supported = supported_kinds(ch)
    if only is not None and only not in supported:
        return []
    concepts = _concepts(ch, presets) if "concept" in supported else []
    rng.shuffle(concepts)
    candidates = _candidates(ch)
    out, attempts, skipped, unused = [], 0, 0, {k: list(candidates) for k in KINDS}
    while len(out) < count and attempts < 30 * count:
        attempts += 1
        if only is not None:
            kind = only
        else:
            # a planned kind that keeps failing (a chapter whose draws cannot make it) gives way
            kind = PLAN[(len(out) + skipped // RETRIES) % len(PLAN)]
            if kind not in supported:
                kind = "multi" if "multi" in supported else supported[0]
        pid = f"{ch}-{seed}-{len(out) + 1}"
        if kind == "concept":
            if not concepts:
                if only is not None:
                    break
                skipped += RETRIES
                continue
            problem = dataclasses.replace(concepts.pop(), id=pid)
        elif kind == "design":
            problem = _design(ch, rng, presets, pid)
        else:
            pool = candidates
            if kind == "inverse" and ch == "long_context":
                pool = [e for e in candidates if e.id in PRICE_DEDUCTIONS] or candidates
            elif kind == "multi":
                pool = [e for e in candidates if _multi_candidate(e)] or pool
            elif kind == "forward":
                pool = [e for e in candidates if not _static_chain(e)] or pool
            fresh = [e for e in unused[kind] if e in pool]
            eq = rng.choice(fresh or pool)  # every equation once before any twice
            if eq in unused[kind]:
                unused[kind].remove(eq)
            kw = _draw(eq, rng, presets)
            if kw is not None and kind == "multi":
                kw = _shorten(eq, kw, presets)
            problem = None if kw is None else _make(eq, kind, kw, presets, pid)
        if problem is not None:
            out.append(problem)
            skipped = 0
        else:
            skipped += 1
    return out


# -- authored problems: one file each in book/problem_bank ------------------------------------

AUTHORED_MODE = {"estimate": "factor", "concept": "prose"}  # any other kind: "relative"


# A problem's moment in the lecture's video (book/lecture.py holds the video and its marks).
lecture_seconds = lecture.seconds
lecture_link = lecture.link


def problem_id(module) -> str:
    """``<chapter>.<slug>``: the folder and the file name of an authored problem."""
    return ".".join(module.__name__.rsplit(".", 2)[-2:])


REDRAWS = 20  # drawings an authored problem may refuse (by a failed check) before it errs


_AUTHORED: dict[tuple, Problem] = reads.ReadsDict()  # by file, seed and preset files


def authored(module, seed: int, presets: Presets) -> Problem:
    """One drawing of an authored problem file: its ``draw`` gets a ``random.Random`` seeded
    with ``seed`` and the problem's id, so the problem is the same for the same seed. A draw
    whose own checks refuse its scenario (``book.problem_bank.require``) is drawn again from the
    next seed.
    A problem file's drawing is kept with the presets it read (``chalkboard serve`` draws again
    only those that read an edited preset)."""
    if not isinstance(module, types.ModuleType):
        return _authored(module, seed, presets)
    key = (module, seed, presets.files)
    if key not in _AUTHORED:
        with reads.recording():
            _AUTHORED[key] = _authored(module, seed, presets)
    return _AUTHORED[key]


def _authored(module, seed: int, presets: Presets) -> Problem:
    pid = problem_id(module)
    drawn = None
    for attempt in range(REDRAWS):  # a draw's checks refuse a scenario: draw again
        rng = random.Random(f"{seed}:{pid}" + (f":{attempt}" if attempt else ""))
        try:
            drawn = module.draw(rng, presets)
            break
        except bank.Refused:
            continue
    if drawn is None:
        raise ChalkboardError(f"problem {pid} found no valid scenario for seed {seed}")
    mark = getattr(module, "LECTURE", None)
    return Problem(
        id=pid,
        chapter=pid.split(".")[0],
        kind=module.KIND,
        equation=module.USES[-1],
        text=drawn.text,
        givens=(),
        answer=drawn.answer,
        solution=tuple(drawn.solution),
        tolerance=drawn.tolerance,
        mode=AUTHORED_MODE.get(module.KIND, "relative"),
        choices=dict(drawn.choices),
        hint=drawn.hint,
        title=module.TITLE,
        uses=tuple(module.USES),
        lecture=None if mark is None else lecture_seconds(mark),
        mistakes=tuple(drawn.mistakes),
        margin=drawn.margin,
    )


def problem_set(
    chapter: str | None = None,
    seed: int = 0,
    count: int | None = None,
    presets: Presets | None = None,
    kind: str | None = None,
    drill: bool = False,
) -> list[Problem]:
    """The authored problems of every chapter (or of one, or of one kind; the first ``count``
    of each chapter), drawn with ``seed``. With ``drill``, the formula drill instead:
    ``count`` generated problems per chapter (default 3)."""
    from units import closest

    if drill:
        return drill_set(chapter, seed, 3 if count is None else count, presets, kind)
    chapters = [c.id for c in derivations.CHAPTERS]
    if chapter is not None and chapter not in chapters:
        raise ChalkboardError(f"unknown chapter {chapter!r}{closest(chapter, chapters)}")
    if kind is not None and kind not in bank.KINDS:
        drills = " (the formula drill has them: --drill)" if kind in KINDS else ""
        known = closest(kind, list(bank.KINDS))
        raise ChalkboardError(f"no authored problem is of kind {kind!r}{drills or known}")
    if count is not None and not 1 <= count <= MAX_COUNT:
        raise ChalkboardError(f"--count must be from 1 to {MAX_COUNT}")
    presets = presets or load()
    out = []
    for ch in [chapter] if chapter else chapters:
        files = [m for m in bank.modules(ch) if kind is None or kind == m.KIND]
        out += [authored(m, seed, presets) for m in files[:count]]
    return out


def answer_text(p: Problem) -> str:
    """The answer as the solution's last step shows it (in bold), e.g. '0.18 USD per million
    tokens': what the checker must accept."""
    return quantity(p.answer)


def givens_text(p: Problem) -> str:
    return "; ".join(f"${g.latex}$ ({g.meaning}) = {g.text}" for g in p.givens)


def tolerance_text(p: Problem) -> str:
    """How an answer is graded, as a sentence ends: 'within 2%', 'within a factor of 1.5', or,
    for a whole count graded so tightly that one more or fewer is wrong, 'as the exact whole
    number' (not 'within 0.004451%')."""
    if p.mode == "factor":
        return f"within a factor of {number(p.tolerance, 3)}"
    whole = p.answer is not None and float(p.answer.m).is_integer()
    if whole and p.tolerance * abs(p.answer.m) < 1:
        return "as the exact whole number"
    return f"within {number(100 * p.tolerance, 2)}%"


# The answer checker's unit table and each problem's spec: book/checker.py (re-exported).


# -- the site's pages ------------------------------------------------------------------------

PROBLEM_SEED = 0  # the site's drawing of each problem; the CLI draws others
PROBLEMS_PER_CHAPTER = 8  # authored problems each chapter has (tests/book/test_problem_bank.py)
KIND_WORDS = {
    "multi": "Multi-step",
    "design": "Design",
    "estimate": "Estimate",
    "numeric": "Numeric",
    "concept": "Concept",
}


def lecture_mark(seconds: int) -> str:
    """``'1:03:37'`` or ``'15:16'``: a moment of the lecture as its chapters are marked."""
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def page_problem(p: Problem) -> dict:
    """What the chapter's problem page shows of ``p``."""
    import html
    import json

    from book.format import unit

    asked = {"answer_json": "", "unit": "", "example": "", "tolerance": ""}
    if p.answer is not None:
        asked = {
            "answer_json": html.escape(json.dumps(answer_spec(p)), quote=True),
            "unit": unit(p.answer.units) or "a pure number",
            # the form of an answer, as the book writes one (the checker reads it)
            "example": quantity(Q_(2.5, p.answer.units)),
            "tolerance": tolerance_text(p),
        }
    lecture = {"lecture_url": "", "lecture_mark": ""}
    if p.lecture is not None:
        lecture = {"lecture_url": lecture_link(p.lecture), "lecture_mark": lecture_mark(p.lecture)}
    return {
        "id": p.id,
        "anchor": p.id.replace(".", "-").replace("_", "-"),
        "kind": p.kind,
        "kind_words": KIND_WORDS.get(p.kind, p.kind),
        "title": p.title,
        "text": p.text,
        "hint": p.hint,
        "solution": list(p.solution),
        **asked,
        **lecture,
    }


def problem_pages(presets: Presets) -> dict:
    """The authored problems of each chapter on a page, plus an index: output path ->
    (template, context)."""
    pages, per_chapter = {}, []
    for chapter in derivations.CHAPTERS:
        problems = [page_problem(p) for p in problem_set(chapter.id, PROBLEM_SEED, None, presets)]
        pages[f"problems/{chapter.id}.md"] = (
            "problems/chapter.md.j2",
            {"chapter": chapter, "problems": problems, "seed": PROBLEM_SEED},
        )
        per_chapter.append({"id": chapter.id, "title": chapter.title, "count": len(problems)})
    pages["problems/index.md"] = ("problems/index.md.j2", {"chapters": per_chapter})
    return pages
