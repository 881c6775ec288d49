"""A gate across the whole bank: no two problems reduce to the same computation.

Three problems once graded one quantity under three names (the reader's P5, P10, P16): the
context at which a batch's caches cost as much as its weights, the same figure at the crossover
batch (the batch cancelled), and the ratio of rebuilding a cache to reading it (the context
cancelled): each was twice the active parameters times the bandwidth over the FLOP rate and
the cache's bytes per token. Their statements differed; their answers, on the same model and
chip, did not.

So the gate draws every problem with its model and chip forced to one pair (a ``random.Random``
whose ``choice`` picks that model or chip whenever it is on offer), for several pairs, and
flags two problems whose answers agree within 0.5% (units aside: a context in tokens and a
pure ratio can be the same number) on two drawings or more (a pair and a seed) and on most of
those both made. A true duplicate agrees wherever both problems draw the pair; two answers that
meet by chance rarely meet twice (two answers that hang on the model and chip alone and meet by
chance would: a reader then looks).

What it cannot catch: two problems that compute the same thing but never draw a common model
and chip (or whose other draws, a context or a batch, differ and matter); a duplicate hidden
by a small correction (counting attention's FLOPs moves a figure by 1-2%, outside 0.5%, though
the student does the same work); and two problems that chain the same results to different
ends (the same steps, a different last one). Those still need a reader.
"""

from __future__ import annotations

import itertools
import math
import random
from functools import cache

import pytest

import derivations
from book import problem_bank
from book.problem_bank import Refused
from units import Q_
from units.presets import load

PAIRS = (  # (model, chip): the pairs the bank's problems draw most
    ("llama_3_1_70b", "h200"),
    ("llama_3_1_70b", "b200"),
    ("qwen3_235b_a22b", "h200"),
    ("qwen3_235b_a22b", "b200"),
    ("qwen3_235b_a22b", "mi300x"),
    ("deepseek_v3", "b200"),
    ("deepseek_v3", "gb200_nvl72"),
    ("kimi_k2", "gb200_nvl72"),
    ("llama_3_1_405b", "mi300x"),
)
SEEDS = (0, 1)
CLOSE = 0.005  # answers this close on one pair are the same number there
TWICE = 2  # drawings (pair and seed) on which two problems must agree to be one computation
FORCED_CHOICES = 200  # a draw that chooses more often finds no scenario on the pair
COUNTS = ("[token]", "[sequence]")  # dropped before comparing: a count is a number too
MODELS, CHIPS = sorted({m for m, _ in PAIRS}), sorted({c for _, c in PAIRS})


class Forcing(random.Random):
    """A ``random.Random`` whose ``choice`` returns an item naming one of ``prefer`` (a preset
    id, or a tuple that starts with one) whenever the sequence offers it; ``forced`` is what it
    chose so. A draw whose checks keep refusing the pair (it chooses again and again) is
    refused: its loop would never end.

    >>> Forcing(0, {"h200"}).choice(("b200", "h200")), Forcing(0, {"x"}).choice((("x", 1),))
    ('h200', ('x', 1))
    """

    def __init__(self, seed, prefer):
        super().__init__(seed)
        self.prefer, self.left, self.forced = set(prefer), FORCED_CHOICES, set()

    def choice(self, seq):
        self.left -= 1
        if self.left < 0:
            raise Refused("no scenario on the forced pair")
        for item in seq:
            head = item[0] if isinstance(item, tuple) and item else item
            if isinstance(head, str) and head in self.prefer:
                self.forced.add(head)
                return item
        return super().choice(seq)


def _key(answer) -> tuple:
    """The answer's dimension without its counts, and its magnitude in base units."""
    q = answer.to_base_units()
    dims = tuple(sorted((d, p) for d, p in q.dimensionality.items() if d not in COUNTS))
    return dims, q.magnitude


def answers(modules, pairs=PAIRS, seeds=SEEDS) -> dict:
    """``{(pair, seed): {problem id: key}}``: every numeric problem that drew the pair's model
    and chip both (the forced choices stand: a draw that chose again freely is left out)."""
    presets, out = load(), {}
    for pair, seed in itertools.product(pairs, seeds):
        drawn = {}
        for module in modules:
            pid = ".".join(module.__name__.rsplit(".", 2)[-2:])
            rng = Forcing(f"{seed}:{pid}", pair)
            try:
                d = module.draw(rng, presets)
            except Refused:
                continue
            if d.answer is not None and rng.forced == set(pair):
                drawn[pid] = _key(d.answer)
        out[(pair, seed)] = drawn
    return out


def same_computations(drawn: dict) -> dict:
    """``{(a, b): drawings}``: two problems whose answers agree on ``TWICE`` drawings or more
    (a forced pair and a seed), and on most of those both drew (two whole counts can meet
    twice by chance; a duplicate meets wherever both draw)."""
    met: dict = {}
    both: dict = {}
    for drawing, keys in drawn.items():
        for (a, (da, va)), (b, (db, vb)) in itertools.combinations(sorted(keys.items()), 2):
            both[(a, b)] = both.get((a, b), 0) + 1
            if da == db and va > 0 and vb > 0 and abs(math.log(va / vb)) < CLOSE:
                met.setdefault((a, b), set()).add(drawing)
    return {k: v for k, v in met.items() if len(v) >= TWICE and 2 * len(v) > both[k]}


@cache
def bank_answers() -> dict:
    chapters = [c.id for c in derivations.CHAPTERS]
    return answers([m for c in chapters for m in problem_bank.modules(c)])


def test_no_two_problems_reduce_to_the_same_computation():
    found = same_computations(bank_answers())
    assert not found, "one computation in two problems: " + "; ".join(
        f"{a} and {b} agree on {sorted(d)}" for (a, b), d in found.items()
    )


def test_the_gate_finds_a_disguised_duplicate():
    """Two stand-ins for the old duplicates: one asks the context at which a batch's caches
    cost as much as its weights (tokens), the other how many times longer rebuilding a cache
    takes than reading it (a ratio); both are 2 N_active BW / (F kv), on whatever they draw.
    A third problem, with the same inputs and another computation, is not flagged."""
    from book.problem_bank import Draw
    from book.problem_bank.batching._figures import figures

    def stand_in(name, make):
        def draw(rng, presets):
            case = dict(model=rng.choice(MODELS), hardware=rng.choice(CHIPS), precision="bf16")
            f = figures(presets=presets, **case)
            return Draw(text="", answer=make(f), solution=("", ""))

        module = type(random)(f"book.problem_bank.stand_in.{name}")
        module.draw = draw
        return module

    def lecture(f):
        per = 2 * f["n_active"] * f["mem_bandwidth"] / (f["flops"] * f["kv_bytes_per_token"])
        return (per * Q_(1, "FLOP/parameter")).to("token")

    def ratio(f):  # the same number, reached as times rather than a context
        read = f["kv_bytes_per_token"] * Q_(1000, "token") / f["mem_bandwidth"]
        rebuild = 2 * f["n_active"] * Q_(1000, "FLOP/parameter") / f["flops"]
        return (rebuild / read).to("")

    def drain(f):
        return (f["hbm_capacity"] / f["mem_bandwidth"]).to("ms")

    modules = [stand_in("context", lecture), stand_in("ratio", ratio), stand_in("drain", drain)]
    found = same_computations(answers(modules, PAIRS[:4]))
    assert set(found) == {("stand_in.context", "stand_in.ratio")}


@pytest.mark.parametrize("value", [1.0, 3.7e-9])
def test_a_chance_meeting_on_one_pair_is_not_flagged(value):
    one = {(("a", "x"), 0): {"p.a": ((), value), "p.b": ((), value * 1.001)}}
    other = {(("b", "y"), 0): {"p.a": ((), value), "p.b": ((), value * 2)}}
    assert same_computations(one | other) == {}  # met once in two: chance
    assert same_computations(one | {(("b", "y"), 0): one[(("a", "x"), 0)]}) == {
        ("p.a", "p.b"): {(("a", "x"), 0), (("b", "y"), 0)}
    }
