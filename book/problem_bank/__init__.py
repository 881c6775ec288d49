"""Authored practice problems: each is one small file written by a person.

A problem file lives in ``book/problem_bank/<chapter>/<slug>.py`` (the folder names the chapter,
the file name is the problem's stable id within it). A person writes the scenario, the question,
the reasoning and the likely mistakes; the file draws its numbers from a seeded ``random.Random``
and computes every number through the catalogue (``derivations.get(...).evaluate``) on sourced
presets. Nothing numeric is typed into the text.

The contract of a problem file (module attributes):

``KIND``
    ``"multi"`` (chains two or more results), ``"design"`` (choose among options under a
    target), ``"estimate"`` (order of magnitude; graded within a factor), ``"numeric"`` (one
    result, used sparingly) or ``"concept"`` (prose answer, no number).
``USES``
    The equation ids the reasoning uses, in order (two or more for ``"multi"``).
``TITLE``
    A short title, as a person would name the scenario.
``LECTURE`` (optional)
    The lecture's moment this problem comes from, ``"H:MM:SS"`` or ``"MM:SS"``.
``draw(rng, presets) -> Draw``
    Draws the parameters (from sensible ranges, with ``rng``) and returns the statement, the
    answer (a pint Quantity in the unit the student is asked for), the worked solution and
    the likely mistakes with their diagnosis.

The statement gives what a student could not know (the chip, the model, the target) and
withholds what the chapter taught (the ~20 ms drain, ~300 FLOP/B, 2N and 6N FLOPs, bytes per
value): the student brings those.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import re
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pint

KINDS = ("multi", "design", "estimate", "numeric", "concept")


@dataclass(frozen=True)
class Mistake:
    """A wrong answer a student is likely to give, and why it is wrong (shown as feedback).

    ``value`` is the wrong answer itself (same dimension as the answer, or not: a wrong
    dimension is diagnosed by the checker on its own). ``why`` names the slip in a sentence a
    student understands: "You counted 2N FLOPs per token; training costs 6N (forward and
    backward)."
    """

    value: pint.Quantity
    why: str


@dataclass(frozen=True)
class Draw:
    """One drawing of an authored problem.

    ``text``: the statement in Markdown ($…$ for math), numbers written with
    ``book.format.quantity``/``number``. It ends with the question.
    ``answer``: a pint Quantity in the unit the question asks for; None for a concept problem.
    ``solution``: the worked reasoning, one Markdown paragraph per step, in words with the
    numbers; the last step states the answer as ``answer_text`` does.
    ``tolerance``: relative tolerance (0.02 = 2%) matching how the solution rounds; for an
    estimate, the factor (e.g. 2.0: within ×2 either way), chosen so the listed mistakes fall
    outside it.
    ``mistakes``: likely wrong answers with their diagnosis.
    ``hint``: a nudge shown on request (optional).
    ``choices``: for a design problem, the chosen option (e.g. {"hardware": "h200",
    "batch_size": 64}); the solution must say when the margin to the next option is under 5%.
    ``margin``: for a design problem, how far the chosen option is ahead of the next one, as a
    fraction (0.12: the next feasible option costs 12% more, or the next cheaper one misses the
    target by 12%, whichever is smaller); under 0.05 the solution says the choice is close.
    """

    text: str
    answer: pint.Quantity | None
    solution: tuple[str, ...]
    tolerance: float = 0.02
    mistakes: tuple[Mistake, ...] = ()
    hint: str = ""
    choices: dict = field(default_factory=dict)
    margin: float | None = None


class Refused(Exception):
    """A drawn scenario its own checks refuse (the engine draws again from the next seed)."""


def require(holds: bool, why: str = "") -> None:
    """Refuse the drawn scenario unless ``holds``: a draw's check of its own physics (the reads
    bind, every expert is read, the KV fits). Unlike ``assert`` it also runs under ``python -O``.

    >>> require(2 > 1, "the reads bind")
    >>> require(1 > 2, "the reads bind")
    Traceback (most recent call last):
    ...
    book.problem_bank.Refused: the reads bind
    """
    if not holds:
        raise Refused(why)


class PresetsMemo:
    """What a problem file works out from the presets alone (a scenario's checks, an option's
    cost), kept for the last presets object drawn on, so the seeds that draw the same scenario
    work it out once. Each entry keeps the presets it read and notes them again on every hit
    (:mod:`units.reads`), so a draw's reads are whole whether it worked a part out or found it
    (``chalkboard serve`` draws again only what read an edited preset). A refusal is kept too
    and raised again.

    >>> from units.presets import load
    >>> memo, presets = PresetsMemo(), load()
    >>> memo(presets, "h100", lambda: presets.get("hardware", "h100_sxm").hbm_capacity)
    <Quantity(80.0, 'gigabyte')>
    >>> from units import reads
    >>> with reads.recording() as got:  # found: not worked out again, its reads noted again
    ...     memo(presets, "h100", lambda: 1 / 0)
    <Quantity(80.0, 'gigabyte')>
    >>> ("hardware", "h100_sxm", "hbm_capacity") in got
    True
    >>> memo.refusing(presets, "x", lambda: require(False, "too slow"))
    Traceback (most recent call last):
    ...
    book.problem_bank.Refused: too slow
    >>> memo.refusing(presets, "x", lambda: 1 / 0)  # refused again at once
    Traceback (most recent call last):
    ...
    book.problem_bank.Refused: too slow
    """

    def __init__(self):
        from units import reads

        self.presets = None
        self.table = reads.ReadsDict()

    def _on(self, presets) -> None:
        if self.presets is not presets:
            self.table.clear()
            self.presets = presets

    def __call__(self, presets, key, work):
        """``work()``, or what it gave (or the refusal it raised) for ``key`` before."""
        from units import reads

        self._on(presets)
        if key not in self.table:
            with reads.recording():  # the entry keeps the reads of its own working out
                try:
                    self.table[key] = (work(), None)
                except Refused as why:
                    self.table[key] = (None, str(why))
        value, refused = self.table[key]
        if refused is not None:
            raise Refused(refused)
        return value

    def refusing(self, presets, key, work):
        """``work()`` (worked out every time), unless it refused ``key`` before: then that
        refusal at once."""
        from units import reads

        self._on(presets)
        if key in self.table:
            raise Refused(self.table[key])
        with reads.recording():
            try:
                return work()
            except Refused as why:
                self.table[key] = str(why)
                raise


def whole_count_tolerance(count: float, tolerance: float = 0.03) -> float:
    """The tolerance of an answer that is a whole count rounded from a quotient (the sequences
    that fit, the racks needed): ``tolerance`` at most, and tight enough that one more or one
    fewer is graded wrong (61 sequences fit: 62 do not).

    >>> round(whole_count_tolerance(61), 5), whole_count_tolerance(5)
    (0.00656, 0.03)
    """
    return min(tolerance, 0.4 / count)


def clear_of_rounding(quotient: float, shown: float = 1e-3) -> bool:
    """Whether a whole count rounded from ``quotient`` (down for what fits, up for what is
    needed) is the same however the givens are rounded as shown (``shown``: the relative error
    of figures written to four places, compounded): 156.9 racks is not (a student's 157.05 needs
    158), 156.5 is.

    >>> clear_of_rounding(156.9), clear_of_rounding(156.5), clear_of_rounding(2662.4)
    (False, True, False)
    """
    low, high = quotient * (1 - shown), quotient * (1 + shown)
    return math.floor(low) == math.floor(high) and math.ceil(low) == math.ceil(high)


def shown(q: pint.Quantity, digits: int = 3) -> pint.Quantity:
    """``q`` as a student reads it from ``quantity(q, digits)``, in ``q``'s unit: a problem
    computes its answer from the givens as its statement prints them, so a student working from
    the page gets the expected answer (a statement that says 2.61 PFLOP/s solves with 2.61).

    >>> from units import Q_
    >>> shown(Q_(2614.9, "TFLOP/s"), 3), shown(Q_(35136, "byte/token").to("kB/token"), 3)
    (<Quantity(2610.0, 'teraFLOP / second')>, <Quantity(35.1, 'kilobyte / token')>)
    """
    from book.format import quantity
    from units.registry import parse_quantity

    return parse_quantity(quantity(q, digits), expect=q.units).to(q.units)


# What the lecture's ≈300 counts, in every message that names it (reader 28): one wording.
LECTURE_RATIO_GLOSS = (
    "FLOP/s over bandwidth at BF16, where a multiply-add's two FLOPs and a weight's two bytes "
    "cancel, and multiply-adds per byte at FP8"
)


def lecture_ratio(presets) -> float:
    """The lecture's round "about 300" multiplies per weight read (FP4 multiplies × half a
    byte over bandwidth: FLOP/s over bandwidth at BF16, multiply-adds per byte at FP8; its
    B* ≈ 300 × total / active): the H100's dense crossover batch per unit of sparsity, to one
    figure, as a student who watched the lecture brings it to any chip. A problem whose chain
    passes through the crossover or the chip's FLOPs per byte reruns its chain with it: the
    result lands inside the window (the lecture's own estimate) or twice the tolerance out and
    named (reader 22).

    >>> from units.presets import load
    >>> lecture_ratio(load())
    300.0
    """
    exact = evaluate(
        "dense_crossover_batch", hardware="h100_sxm", precision="bf16", presets=presets
    )
    return float(f"{exact.to('sequence').m:.0e}")


def lands_clear(value, answer, tolerance: float) -> bool:
    """Whether a slip's ``value`` lands inside the relative window or at least twice its width
    away, never just outside it, where a student's rounding decides (reader 20).

    >>> from units import Q_
    >>> [lands_clear(Q_(v, "s"), Q_(1, "s"), 0.02) for v in (1.01, 1.03, 1.05, 0.9)]
    [True, False, True, True]
    """
    off = abs((value / answer).to("").m - 1)
    return off <= tolerance or off >= 2 * tolerance


def slips_apart(mistakes, answer, tolerance: float, factor: bool = False) -> bool:
    """Whether the slips that land outside the relative window around ``answer`` sit at least
    twice its width from each other, so that each wrong value has one diagnosis (reader 26).
    ``factor``: ``tolerance`` is an estimate's factor f, and the slips outside it must sit a
    factor f² from each other.

    >>> from units import Q_
    >>> from book.problem_bank import Mistake
    >>> slips = [Mistake(Q_(v, "s"), "") for v in (2.0, 2.02, 1.005)]
    >>> slips_apart(slips, Q_(1, "s"), 0.02), slips_apart(slips[::2], Q_(1, "s"), 0.02)
    (False, True)
    >>> wide = [Mistake(Q_(v, "s"), "") for v in (2.0, 3.0, 1.1)]
    >>> slips_apart(wide, Q_(1, "s"), 1.25, True), slips_apart(wide[1:], Q_(1, "s"), 1.25, True)
    (False, True)
    """

    def apart(a, b) -> bool:
        r = (a.value / b.value).to("").m
        return max(r, 1 / r) >= tolerance**2 if factor else abs(r - 1) >= 2 * tolerance

    named = [m for m in mistakes if not within(m.value, answer, tolerance, factor)]
    return all(apart(a, b) for i, a in enumerate(named) for b in named[i + 1 :])


def money(q: pint.Quantity, digits: int = 4) -> str:
    """A price as a person writes it: below a dollar in cents, to ``digits`` figures as
    :func:`book.format.quantity` writes any figure; from a dollar up, and anything that is not
    in USD, as ``quantity`` writes it. (``book.format.said`` gives the 2-3 figures a sentence
    says; a graded answer keeps its figures.)

    >>> from units import Q_
    >>> money(Q_(0.1918, "USD/Mtoken"), 3), money(Q_(0.03, "USD/Mtoken"))
    ('19.2¢ per million tokens', '3¢ per million tokens')
    >>> money(Q_(2.5, "USD/chip/hour")), money(Q_(70, "ms")), money(Q_(0.0042, "USD/GB/hour"))
    ('2.5 USD per chip per hour', '70 ms', '0.42¢ per GB per hour')
    """
    from book.format import number, quantity, unit

    text = unit(q.units)
    if not text.startswith("USD") or not 0 < abs(q.magnitude) < 1:
        return quantity(q, digits)
    per = re.sub(r"/\((\w+)·h\)$", r" per \1 per hour", text[3:])  # "/(GB·h)"
    return f"{number(q.magnitude * 100, digits)}¢{per}"


def distinct_mistakes(mistakes, answer, tolerance: float, factor: bool = False):
    """The slips the checker can tell apart, each with its one diagnosis: a slip that lands
    inside the accepted answer is dropped, and of two that land within ``tolerance`` of each
    other only the first listed is kept (list the likelier slip first), so the feedback never
    names two errors for one value (reader 13, issue 21). ``factor``: ``tolerance`` is an
    estimate's factor (within ×``tolerance`` either way), not a relative error.

    >>> from units import Q_
    >>> slips = [Mistake(Q_(v, "s"), w) for v, w in ((1, "="), (2, "x2"), (2.01, "y"), (0.5, "/2"))]
    >>> [m.why for m in distinct_mistakes(slips, Q_(1, "s"), 0.02)]
    ['x2', '/2']
    """
    out: list[Mistake] = []
    for m in mistakes:
        if not any(
            within(m.value, o.value, tolerance, factor) for o in (*out, Mistake(answer, ""))
        ):
            out.append(m)
    return tuple(out)


def within(a, b, tolerance: float, factor: bool = False) -> bool:
    """Whether ``a`` is within ``tolerance`` of ``b`` (relative, or with ``factor`` a factor
    ``tolerance`` either way): the test the checker's window, ``slips_apart`` and
    ``distinct_mistakes`` apply, for a problem that asks whether two of its values would read as
    one (values of different dimensions never do).

    >>> from units import Q_
    >>> within(Q_(1.02, "s"), Q_(1, "s"), 0.03), within(Q_(1.04, "s"), Q_(1, "s"), 0.03)
    (True, False)
    >>> within(Q_(0.5, "s"), Q_(1, "s"), 2.0, factor=True), within(Q_(1, "s"), Q_(1, "GB"), 9.0)
    (True, False)
    """
    if a.dimensionality != b.dimensionality:
        return False
    ratio = (a / b).to("").m
    if factor:
        return ratio > 0 and max(ratio, 1 / ratio) <= tolerance
    return abs(ratio - 1) <= tolerance


def evaluate(equation: str, detailed: bool = False, **case):
    """``derivations.get(equation).evaluate(**case)`` on the inputs of ``case`` the equation reads:
    a problem keeps one case (presets, chip count, context, rent, ...) for all its equations.
    ``detailed`` gives ``evaluate_detailed``'s result (its ``inputs`` name every figure used).

    >>> from units import Q_
    >>> rent = Q_(3, "USD/chip/h")
    >>> case = dict(hardware="h100_sxm", model="llama_3_1_70b", price_per_chip_hour=rent)
    >>> f"{evaluate('hbm_drain_time', **case):.3~}"
    '23.9 ms'
    """
    from derivations import SYMBOLS, get
    from derivations.inputs import reachable

    eq = get(equation)
    names = reachable(eq)
    read = {k: v for k, v in case.items() if k in names or k not in SYMBOLS}
    return eq.evaluate_detailed(**read) if detailed else eq.evaluate(**read)


def modules(chapter: str) -> list[ModuleType]:
    """The authored problem files of ``chapter``, by file name.

    >>> [m.__name__.rsplit(".", 1)[1] for m in modules("batching")][:1]
    ['choose_server_for_speed']
    """
    try:
        package = importlib.import_module(f"{__name__}.{chapter}")
    except ModuleNotFoundError:
        return []
    names = sorted(info.name for info in pkgutil.iter_modules(package.__path__))
    names = [name for name in names if not name.startswith("_")]  # helpers, not problems
    return [importlib.import_module(f"{package.__name__}.{name}") for name in names]
