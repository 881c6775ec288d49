"""Flashcards a student keeps: one idea per card, its numbers computed from equations and presets.

Every card is authored, in ``book/concepts.toml`` (the prose: concept, formula and cloze cards)
or in the tables below (cards whose case is data: numbers worth knowing, what-ifs, regimes,
comparisons, and the lecture's claims the audit checks). A card has a stable id, a chapter, a
kind, a front and a back in Markdown with ``$...$`` math, its source, and the one *fact* it tests:
no fact is tested by more than two cards (tests/book/test_cards.py holds the deck to it). Kinds:

- *concept*: a why / what-if / which-regime question, covering the lecture's own deck;
- *formula*: write a relation the lecture uses, in the form a person writes it (hidden unit
  factors shown as their values: ``6 N D``, not ``3 c_fwd N D``);
- *cloze*: the same, one term left blank (an Anki cloze note gives one card per blank);
- *number*: a figure worth knowing, its chip and precision named on the front;
- *whatif*: one input changes; the answer is the output evaluated at the new point, and says when
  the regime changes (a crossover that no longer exists);
- *regime*, *comparison*: which resource binds, which of two presets wins, and why;
- *claim*: a claim of the lecture or its summaries, its verdict and the reason.

A card drawn from the lecture links to its moment in the lecture's video; a card a figure
helps shows it on its back (the site, the Study page and the Anki package's media).

>>> card = Card("eq:hbm_drain_time:statement", "batching", "formula",
...             "Write the HBM drain time.", "$$t = C / W$$", "equation hbm_drain_time")
>>> card.to_dict()["source"]
'equation hbm_drain_time'
>>> anki_math(card.back)  # the math delimiters Anki renders
'\\\\[t = C / W\\\\]'
>>> reworded = Card(card.id, "batching", "formula", "Reworded.", card.back, card.source)
>>> guid(reworded) == guid(card)  # the Anki note follows the id: an edit updates it
True
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

import sympy as sp

import derivations
from book import lecture
from book.cases import (  # noqa: F401 (public names)
    PRECISIONS,
    PRESET_KINDS,
    REFERENCE,
    precision_words,
    reference_case,
)
from book.format import context_tokens, number, quantity, sentence
from book.format import spoken as format_spoken
from derivations.core import Constant, Equation
from units import ChalkboardError, reads
from units.presets import Presets, load


@dataclass(frozen=True)
class Card:
    id: str
    chapter: str
    kind: str
    front: str
    back: str
    source: str
    fact: str = ""  # the one fact the card tests (at most two cards per fact)
    covers: tuple[str, ...] = ()  # lecture-deck topics (book/lecture_deck.toml)
    figure: str = ""  # a figure of book.figures shown with the answer
    video: str = ""  # the card's moment in the lecture's video (a URL)
    case: tuple[tuple[str, str], ...] = ()  # the presets and inputs the front names
    note: str = ""  # cards of one Anki cloze note share it (its id)
    cloze: str = ""  # that note's text, its blanks marked {{c1::...}}

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in ("id", "chapter", "kind", "front", "back", "source")}
        extra = {k: getattr(self, k) for k in ("fact", "figure", "video") if getattr(self, k)}
        return out | extra | ({"covers": list(self.covers)} if self.covers else {})


CONCEPTS = Path(__file__).with_name("concepts.toml")
LECTURE_DECK = Path(__file__).with_name("lecture_deck.toml")


# -- the lecture's deck and video ----------------------------------------------------------


def spoken(value, digits: int = 4) -> str:
    """A quantity as a student says it on a card: a context length is tokens (the tokens of one
    sequence), a user's rate tokens per second for each user; anything else as
    :func:`book.format.quantity` writes it.

    >>> from units import Q_
    >>> spoken(Q_(739, "token/sequence"), 3), spoken(Q_(44.1, "token/s/sequence"), 3)
    ('739 tokens', '44.1 tokens per second for each user')
    >>> spoken(Q_(2, "ms"))
    '2 ms'
    """
    per_sequence = value * value._REGISTRY.Quantity(1, "sequence")
    if per_sequence.check("[token]"):
        return context_tokens(value, digits)
    if per_sequence.check("[token]/[time]"):
        return quantity(value, digits).removesuffix(" per sequence") + " for each user"
    return quantity(value, digits)


def _deck() -> dict:
    with LECTURE_DECK.open("rb") as f:
        return tomllib.load(f)


def lecture_topics() -> dict[str, str]:
    """The lecture deck's topics: ``section.topic`` -> the question, paraphrased.

    >>> len(lecture_topics())
    27
    """
    raw = _deck()
    return {f"{s}.{k}": q for s, topics in raw.items() if s != "video" for k, q in topics.items()}


_seconds = lecture.seconds
video_link = lecture.link


def topic_moment(topic: str) -> int:
    """Where a lecture-deck topic is in the video: its own moment, else its section's start.

    >>> topic_moment("batch-size.flops_per_byte"), topic_moment("moe-layout.rack_boundary")
    (916, 1929)
    """
    video = _deck()["video"]
    if topic in video["moment"]:
        return _seconds(video["moment"][topic])
    return _seconds(video["section"][topic.split(".")[0]]["start"])


_SAID_AT = re.compile(r"\((\d{1,2}:\d{2}(?::\d{2})?)\)")
_SECTION = re.compile(r"^lecture\b[^;]*?\bsection ([A-G])\b")


def claim_moment(said_by: str) -> int | None:
    """Where the lecture makes a claim: a time it gives, else its section's start; None for a
    claim only a summary makes.

    >>> claim_moment("lecture, section A (15:16); seed summary 004")
    916
    >>> claim_moment("lecture, section F"), claim_moment("seed summary 001")
    (5582, None)
    """
    section = _SECTION.match(said_by)
    if section is None:
        return None
    at = _SAID_AT.search(said_by)
    if at:
        return _seconds(at[1] if at[1].count(":") == 2 else f"00:{at[1]}")
    starts = {s["letter"]: s["start"] for s in _deck()["video"]["section"].values()}
    return _seconds(starts[section[1]])


# -- formulas as a person writes them --------------------------------------------------------


def _constants() -> dict:
    """Each bookkeeping constant's symbol -> its value (u = 1 token per sequence, c_fwd = 2
    FLOPs per parameter per token, a fit's token unit D_0 = 1 token): the lecture writes
    ``2 N``, not ``u c_fwd N``, and Chinchilla ``B / D^beta``."""
    out = {}
    for s in derivations.SYMBOLS.values():
        if isinstance(s, Constant):
            value = float(s.value.magnitude)
            out[s.sym] = sp.Integer(int(value)) if value.is_integer() else sp.Float(value)
    return out


def written_form(
    eq: Equation, keep: tuple[str, ...] | None = None, zero: tuple[str, ...] = ()
) -> sp.Expr:
    """``eq``'s right side as the lecture writes it: the intermediates not in ``keep`` inlined
    (``keep`` None: none inlined), the symbols in ``zero`` set to zero (a dense model's
    routed-weight share), the bookkeeping constants as their values.

    >>> derivations.to_latex(written_form(derivations.get("training_flops")))
    '6 N_{\\\\mathrm{active}} D_{\\\\mathrm{pre}}'
    """
    from derivations.core import shown

    zeros = {derivations.SYMBOLS[z].sym: 0 for z in zero}
    expr = eq.rhs if keep is None else eq.expanded(frozenset((*keep, *zero)))
    expr = shown(expr).subs(zeros).subs(_constants())
    return sp.together(expr) if keep is not None else expr


def written_latex(eq_id: str, keep=None, zero=()) -> str:
    r"""``lhs = rhs`` in the written form (:func:`written_form`), each sum's positive terms
    first, as a person writes it (``c_remat - c_read``, not ``- c_read + c_remat``).

    >>> costs = ("cache_recompute_cost", "cache_hold_cost", "cache_readback_cost")
    >>> r"{c_{\mathrm{remat}} - c_{\mathrm{read}}}" in written_latex("cache_breakeven_time", costs)
    True
    """
    from derivations.core import to_display_latex

    eq = derivations.get(eq_id)
    return to_display_latex(sp.Eq(eq.lhs.sym, written_form(eq, keep, zero), evaluate=False))


def named_latex(eq_id: str, names: tuple[str, ...]) -> str:
    r"""``lhs = rhs`` in the written form with each equation in ``names`` folded back into its
    own symbol (its right side replaced by its left), as a person names an intermediate.

    >>> "M_{\\mathrm{weights}}" in named_latex("memory_per_gpu", ("weight_memory",))
    True
    """
    from derivations.core import to_display_latex

    eq = derivations.get(eq_id)
    expr = written_form(eq)
    for name in names:
        part = derivations.get(name)
        folded = expr.subs(part.rhs, part.lhs.sym)
        if folded == expr:
            raise ChalkboardError(f"{eq_id}: {name}'s right side is not in it")
        expr = folded
    return to_display_latex(sp.Eq(eq.lhs.sym, expr, evaluate=False))


_ASIDE_WORDS = re.compile(r" \(.*?\)")


def _inputs_text(eq: Equation, kw: dict, presets: Presets) -> str:
    """The figures an evaluation of ``eq`` on ``kw`` reads from presets and givens, each with
    what it is: 'HBM bandwidth of one chip $W$ = 3.35 TB/s'."""
    result = eq.evaluate_detailed(presets=presets, **kw)
    shown = [
        f"the {_ASIDE_WORDS.sub('', i.symbol.meaning)} ${i.symbol.latex}$ = {spoken(i.value, 3)}"
        for name, i in result.inputs.items()
        if i.symbol.sym in eq.rhs.free_symbols and not i.origin.startswith("constant")
    ]
    return ", ".join(shown)


# -- concept, formula and cloze cards from book/concepts.toml --------------------------------


_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def word(x) -> str:
    """A whole number under a hundred as prose writes it: 'three', 'thirty-two' (a quantity's
    magnitude alone), the way the deck's authored text says its small counts.

    >>> word(3), word(3.0), word(20), word(32)
    ('three', 'three', 'twenty', 'thirty-two')
    """
    value = float(getattr(x, "magnitude", x))
    if not value.is_integer() or not 0 <= value < 100:
        raise ChalkboardError(f"{value} is not a whole number under a hundred to say in words")
    tens, ones = divmod(int(value), 10)
    if tens < 2:
        return _WORDS[int(value)]
    return _TENS[tens - 2] + (f"-{_WORDS[ones]}" if ones else "")


_BIG = ((1e12, "trillion"), (1e9, "billion"), (1e6, "million"), (1e3, "thousand"))


def big(x, figures: int = 2) -> str:
    """A large count as a person says it, in words at ``figures`` figures: '50 million',
    'about 260 trillion' (a rounded figure says so); below a thousand, the number itself.

    >>> big(5e7), big(2.63e14), big(2e12), big(131.5)
    ('50 million', 'about 260 trillion', '2 trillion', 'about 130')
    """
    x = float(getattr(x, "magnitude", x))
    scale, name = next(((s, n) for s, n in _BIG if abs(x) >= s), (1, ""))
    shown = number(x / scale, figures)
    exact = float(shown.replace(",", "")) * scale
    about = "" if abs(exact - x) <= 1e-9 * abs(x) else "about "
    return f"{about}{shown} {name}".rstrip()


def _placeholders(chapter: str, presets: Presets) -> dict:
    """What a card's template may use: q(), tex(), param() (said) and pv() (a parameter's value,
    to pass to q), val() (a computed quantity, for ratios), n() (a number at 2 figures), word()
    (a small count in words), say() (a quantity as a sentence says it: "0.82¢ per
    million tokens"), field() (a preset's sourced figure), preset() (its short name) and ctx."""
    from book.compute import chapter_context

    def q(eq_id: str, to: str | None = None, bare: bool = False, figures: int = 3, **kw) -> str:
        """Three figures (or ``figures``), as a person says a number; ``to`` a unit, ``bare`` the
        number only."""
        value = derivations.get(eq_id).evaluate(presets=presets, **kw)
        value = value.to(to) if to else value
        return number(value.magnitude, figures) if bare else spoken(value, figures)

    def val(eq_id: str, **kw):
        """The quantity itself, for a ratio of two: ``n((val(a) / val(b)).to(""))``."""
        return derivations.get(eq_id).evaluate(presets=presets, **kw)

    return {
        "q": q,
        "val": val,
        "n": lambda x, figures=2: number(getattr(x, "magnitude", x), figures),
        "word": word,
        "big": big,
        "say": lambda x, figures=2: format_spoken(x, most=figures),
        "field": lambda kind, pid, name: presets.get(kind, pid).fields[name],
        "tex": lambda eq_id, **kw: written_latex(eq_id, **kw),
        "param": lambda name: quantity(presets.parameter[name].value),
        "pv": lambda name: presets.parameter[name].value,
        "preset": lambda kind, pid: short_name(kind, pid, presets),
        "ctx": chapter_context(chapter, presets),
    }


class _Templates:
    """Renders a card's jinja fields with its chapter's placeholders (computed once each)."""

    def __init__(self, presets: Presets):
        import jinja2

        self.env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
        self.presets = presets
        self.names: dict[str, dict] = {}

    def __call__(self, text: str, chapter: str, where: str, **extra) -> str:
        import jinja2

        if chapter not in self.names:
            self.names[chapter] = _placeholders(chapter, self.presets)
        try:
            return self.env.from_string(text).render(**self.names[chapter], **extra).strip()
        except (jinja2.TemplateError, ChalkboardError) as err:
            raise ChalkboardError(f"{where}: {err}") from None


def _authored() -> dict:
    with CONCEPTS.open("rb") as f:
        return tomllib.load(f)


def _video(covers) -> str:
    return video_link(topic_moment(covers[0])) if covers else ""


def concept_cards(presets: Presets, chapter: str | None = None) -> list[Card]:
    """The hand-written understanding cards, their numbers filled from equations and presets;
    ``chapter``: that chapter's alone (only its context is computed)."""
    raw = _authored()
    render = _Templates(presets)
    topics = lecture_topics()
    moments = _deck()["video"].get("card", {})
    chapters = {c.id for c in derivations.CHAPTERS}
    cards = []
    for entry in raw["card"]:
        where = f"concepts.toml card {entry.get('id')!r}"
        if entry["chapter"] not in chapters:
            continue  # a chapter not loaded (a user's catalogue)
        if chapter is not None and entry["chapter"] != chapter:
            continue
        covers = tuple(entry.get("covers", ()))
        unknown = [t for t in covers if t not in topics]
        if unknown:
            raise ChalkboardError(f"{where}: unknown lecture-deck topic {unknown[0]!r}")
        front, back = (render(entry[side], entry["chapter"], where) for side in ("front", "back"))
        cid = f"concept:{entry['chapter']}:{entry['id']}"
        video = video_link(_seconds(moments[cid])) if cid in moments else _video(covers)
        cards.append(
            Card(
                cid,
                entry["chapter"],
                "concept",
                front,
                back,
                f"chapter {entry['chapter']}",
                fact=entry["fact"],
                covers=covers,
                figure=entry.get("figure", ""),
                video=video,
            )
        )
    return cards


def _formula_cards(presets: Presets, chapters: set[str]) -> list[Card]:
    render = _Templates(presets)
    cards = []
    for entry in _authored().get("formula", ()):
        eq = derivations.get(entry["equation"])
        if eq.chapter not in chapters:
            continue
        where = f"concepts.toml formula {eq.id!r}"
        keep, zero = entry.get("keep"), tuple(entry.get("zero", ()))
        latex = written_latex(eq.id, tuple(keep) if keep is not None else None, zero)
        if "name" in entry:  # intermediates shown by their own symbol, to fit in a head
            latex = named_latex(eq.id, tuple(entry["name"]))
        if "answer" in entry:  # a rule's constant is the fact itself: shown as its value
            latex = render(entry["answer"], eq.chapter, where)
        front = render(entry["front"], eq.chapter, where)
        why = render(entry["why"], eq.chapter, where)
        covers = tuple(entry.get("covers", ()))
        cards.append(
            Card(
                f"eq:{eq.id}:statement",
                eq.chapter,
                "formula",
                front,
                f"$${latex}$$\n\n{why}",
                f"equation {eq.id}",
                fact=entry["fact"],
                covers=covers,
                figure=entry.get("figure", ""),
                video=_video(covers),
            )
        )
    return cards


CLOZE_MARK = "CLOZEMARK"  # a placeholder symbol's name, replaced in the LaTeX


def _blank(expr: sp.Expr, names: list[str]) -> sp.Expr:
    """The smallest term of a sum in ``expr`` that holds every symbol in ``names``."""
    wanted = {derivations.SYMBOLS[n].sym for n in names}
    terms = [
        a
        for node in sp.preorder_traversal(expr)
        if isinstance(node, sp.Add)
        for a in node.args
        if wanted <= a.free_symbols
    ]
    if not terms:
        raise ChalkboardError(f"no term of {expr} holds {names}")
    return min(terms, key=sp.count_ops)


def _shape(expr: sp.Expr):
    """A term's shape with its symbols anonymised: ``A N^-alpha`` and ``B D^-beta`` match."""
    if isinstance(expr, sp.Symbol):
        return "symbol"
    if not expr.args:
        return str(expr)
    return (type(expr).__name__, tuple(sorted((_shape(a) for a in expr.args), key=repr)))


def _mirrored(expr: sp.Expr, term: sp.Expr) -> None:
    """Refuse a blank a student could read off the front: a term of the same sum with the same
    shape (Chinchilla's two power laws) gives it away by symmetry.

    >>> a, n = sp.symbols("a n")
    >>> _mirrored(a * n + 1, a * n)  # nothing else of its shape: fine
    """
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.Add) and term in node.args:
            twins = [o for o in node.args if o != term and _shape(o) == _shape(term)]
            if twins:
                raise ChalkboardError(
                    f"the blank {term} mirrors {twins[0]}, shown beside it: a student reads it "
                    "off by symmetry (ask for the whole formula instead)"
                )


def _anki_cloze(latex: str) -> str:
    """LaTeX inside an Anki cloze: ``}}`` would end the deletion early, so it is spaced."""
    while "}}" in latex:
        latex = latex.replace("}}", "} }")
    return latex


def _cloze_cards(presets: Presets, chapters: set[str]) -> list[Card]:
    render = _Templates(presets)
    cards = []
    for entry in _authored().get("cloze", ()):
        eq = derivations.get(entry["equation"])
        if eq.chapter not in chapters:
            continue
        where = f"concepts.toml cloze {entry['id']!r}"
        keep, zero = entry.get("keep"), tuple(entry.get("zero", ()))
        expr = written_form(eq, tuple(keep) if keep is not None else None, zero)
        terms = [_blank(expr, names) for names in entry["blanks"]]
        for term in terms:
            try:
                _mirrored(expr, term)
            except ChalkboardError as err:
                raise ChalkboardError(f"{where}: {err}") from None
        marks = [sp.Symbol(f"{CLOZE_MARK}{chr(65 + i)}") for i in range(len(terms))]
        marked = derivations.to_latex(
            sp.Eq(eq.lhs.sym, expr.xreplace(dict(zip(terms, marks, strict=True))), evaluate=False)
        )
        full = derivations.to_latex(sp.Eq(eq.lhs.sym, expr, evaluate=False))
        shown = [derivations.to_latex(t) for t in terms]
        prompt = render(entry["front"], eq.chapter, where)
        says = [render(s, eq.chapter, where) for s in entry["says"]]
        note = f"cloze:{eq.chapter}:{entry['id']}"
        anki = marked
        for i, (mark, term) in enumerate(zip(marks, shown, strict=True)):
            anki = anki.replace(str(mark), f" {{{{c{i + 1}::{_anki_cloze(term)} }}}} ")
        text = f"{prompt}\n\n$${anki}$$"
        covers = tuple(entry.get("covers", ()))
        for i, (mark, term) in enumerate(zip(marks, shown, strict=True)):
            front = marked.replace(str(mark), r"\boxed{\;?\;}")
            for other, other_term in zip(marks, shown, strict=True):
                front = front.replace(str(other), f"{{{other_term}}}")
            cards.append(
                Card(
                    f"{note}:{i + 1}",
                    eq.chapter,
                    "cloze",
                    f"Fill the box. {prompt}\n\n$${front}$$",
                    f"${term}$: {says[i]}\n\n$${full}$$",
                    f"equation {eq.id}",
                    fact=entry["fact"],
                    covers=covers,
                    figure=entry.get("figure", ""),
                    video=_video(covers),
                    note=note,
                    cloze=text,
                )
            )
    return cards


# -- cards whose case is data ----------------------------------------------------------------


_VENDOR = re.compile(r"^(?:NVIDIA|AMD Instinct|Google) ")
_ASIDE = re.compile(r" \(.*?\)| SXM\b.*$| / .*$")


def short_name(kind: str, preset_id: str, presets: Presets) -> str:
    """A preset as a person says it: its vendor, form factor and asides dropped.

    >>> from units.presets import load
    >>> p = load()
    >>> short_name("hardware", "h100_sxm", p), short_name("hardware", "gb200_nvl72", p)
    ('H100', 'GB200 NVL72')
    >>> short_name("model", "deepseek_v3", p), short_name("api", "deepseek_v3", p)
    ('DeepSeek-V3', 'DeepSeek V3')
    """
    return _ASIDE.sub("", _VENDOR.sub("", presets.get(kind, preset_id).name)).strip()


def _plural(chip: str) -> str:
    """'H100s', 'GB200 NVL72 chips'."""
    return f"{chip} chips" if " " in chip else f"{chip}s"


def _names(case: dict, presets: Presets) -> dict:
    """How a front names a case's presets, as a person says them: chip ('H100'), chips
    ('H100s'), model, precision (as written: FP8), context ('8,192 tokens') and batch
    ('64 sequences')."""
    out = {}
    for kind, key in (("hardware", "chip"), ("model", "model"), ("api", "api"), ("tier", "tier")):
        if kind in case:
            out[key] = short_name(kind, case[kind], presets)
    if "chip" in out:
        out["chips"] = _plural(out["chip"])
    if "precision" in case:
        out["precision"] = str(case["precision"]).upper()
    if "context_length" in case:
        from derivations.inputs import parse_override

        tokens = parse_override("context_length", case["context_length"]).to("token/sequence")
        out["context"] = f"{number(tokens.magnitude)} tokens"
    if "batch_size" in case:
        batch = parse_override("batch_size", case["batch_size"]).to("sequence")
        out["batch"] = f"{number(batch.magnitude)} sequences"
    return out


# Figures worth knowing: equation, the case (presets and inputs), the fact, the lecture's claim
# of book/claims.toml that rounds it (or None), and the question, its {chip}, {chips}, {model},
# {precision}, {context} and {batch} named from the case.
NUMBERS = (
    (
        "hbm_drain_time",
        dict(hardware="rubin"),
        "hbm-drain",
        "rubin_drain",  # reader 24: 14.4 ms, which the lecture rounds to 15
        "In the lecture's own example of the HBM drain time, how long does a {chip} GPU take "
        "to read its whole HBM once?",
        # the route: the lecture's own example (transcript: "288 GB / 20 TB/s ... about 15
        # ms"), and the lecture's serving chip, the GB200, as a second example
        "Its {{ n(field('hardware', 'rubin', 'hbm_capacity').to('GB'), 3) }} GB of HBM over "
        "its {{ n(field('hardware', 'rubin', 'hbm_bandwidth').to('TB/s')) }} TB/s, as the "
        "lecture says. A GB200 GPU drains its "
        "{{ n(field('hardware', 'gb200_nvl72', 'hbm_capacity').to('GB'), 3) }} GB at "
        "{{ n(field('hardware', 'gb200_nvl72', 'hbm_bandwidth').to('TB/s')) }} TB/s in "
        "{{ q('hbm_drain_time', hardware='gb200_nvl72', figures=2) }}: a step that reads a "
        "full HBM takes tens of milliseconds.",
    ),
)


def _lecture_claim(claim_id: str):
    """The figure the lecture said, as book/claims.toml records it ("15 ms")."""
    from book.claims import CLAIMS
    from units import parse_quantity

    claims = tomllib.loads(CLAIMS.read_text(encoding="utf-8"))["claim"]
    return parse_quantity(claims[claim_id]["expected"], what="claims.toml")


def _number_cards(presets: Presets) -> list[Card]:
    render = _Templates(presets)
    cards = []
    for eq_id, case, fact, claim, question, why in NUMBERS:
        eq = derivations.get(eq_id)
        value = eq.evaluate(presets=presets, **case)
        # the authored reason is the route; without one, the equation and its inputs are
        route = render(why, eq.chapter, f"number card {eq_id!r}") if why else ""
        route = route or f"From ${written_latex(eq_id)}$ with {_inputs_text(eq, case, presets)}."
        # two figures, as a person says a figure worth knowing ("about 24 ms"); beside the
        # lecture's rounding, three, so the two differ where they do
        answer = f"About {spoken(value, 2)}."
        if claim:
            said = _lecture_claim(claim).to(value.units)
            answer = f"About {spoken(value, 3)} (the lecture rounds it to {number(said.m, 2)})."
        back = f"{answer}\n\n{route}"
        cards.append(
            Card(
                f"eq:{eq_id}:number",
                eq.chapter,
                "number",
                question.format(**_names(case, presets)),
                back,
                f"equation {eq_id}",
                fact=fact,
                case=tuple((k, str(v)) for k, v in case.items()),
            )
        )
    return cards


# "What if X changes?": one input scaled (a factor) or one preset swapped (a preset id); the
# answer is the output evaluated at both points, with the authored reason.
WHATIFS = (
    dict(
        id="batch-below-crossover",
        equation="cost_per_token",
        case=dict(
            hardware="h100_sxm",
            model="deepseek_v3",
            precision="fp8",
            batch_size="64 sequence",
            context_length="8192 token/sequence",
        ),
        vary="batch_size",
        by=2,
        ratio_only=True,
        # the direction and the reason, not a preset's factor to compute (reader 16: 0.58 could
        # be computed, not recalled, and "nearly halves" oversold a cut of about 40%); a test
        # holds the computed factor to the words
        says="falls to a bit over half",
        figure=False,
        fact="batch-below-crossover",
        front="{model} on {chips} runs at {precision} (weights, arithmetic and KV cache) at a "
        "batch of {batch} with {context} of context each, far below its crossover batch. The "
        "batch doubles: roughly what happens to the cost per token?",
        why="The memory reads set the step time, far above the compute (attention's FLOPs "
        "included), and they grow only a little: a few more experts read, and the KV cache "
        "doubles but stays small beside the weights. So twice the tokens share a step only a "
        "little longer.",
    ),
    dict(
        id="memory-wall",
        equation="kv_compute_crossover_context",
        case=dict(hardware="h100_sxm", model="llama_3_1_70b", precision="fp8"),
        vary="flops",
        by=2,
        ratio_only=True,  # the principle, not a context to compute (reader 12)
        says="roughly halves",
        figure=False,  # as precise as the lecture's factor-of-two estimate (reader 13)
        fact="memory-wall",
        front="The FLOP/s of an {chip} double while its HBM bandwidth stays flat. Serving "
        "{model} at {precision} at a large batch, attention's FLOPs counted, what happens to "
        "the context length at which the KV fetch overtakes the compute?",
        why="Each token's compute, attention's included, takes half as long while its KV fetch "
        "does not, so the KV fetch catches up at a little under half the context: faster chips "
        "hit the memory wall sooner. That is the lecture's reading of why context lengths "
        "stopped growing while FLOP/s kept climbing.",
    ),
)


def _changed_case(spec: dict, presets: Presets) -> dict:
    case = dict(spec["case"])
    if "to" in spec:
        case[spec["vary"]] = spec["to"]
        return case
    eq = derivations.get(spec["equation"])
    base = eq.evaluate_detailed(presets=presets, **spec["case"])
    name = spec["vary"]
    if name in base.inputs:
        value = base.inputs[name].value
    else:  # an input an intermediate reads (the batch of a cost per token)
        from derivations.inputs import parse_override

        value = parse_override(name, spec["case"][name])
    case[name] = value * spec["by"]
    return case


def _change_words(
    before, after, ratio_only: bool = False, says: str = "", figure: bool = True
) -> str:
    """How an output moved, as a person says it: 'It halves: from 5,360 to 2,680 sequences.'
    ``ratio_only``: the factor alone, for an output whose level rests on inputs the front does
    not name (a cost per token on the chip-hour price); ``says``: the change in words first
    ('nearly halves'), the computed factor after it unless ``figure`` is off (a factor-of-two
    estimate said in words alone: 'It roughly halves.').

    >>> from units import Q_
    >>> _change_words(Q_(1.0, "s"), Q_(0.58, "s"), ratio_only=True, says="nearly halves")
    'It nearly halves, to 0.58 of what it was.'
    >>> _change_words(Q_(1.0, "s"), Q_(0.49, "s"), True, "roughly halves", figure=False)
    'It roughly halves.'
    """
    ratio = (after / before).to("").magnitude
    span = "" if ratio_only else f": from {spoken(before, 3)} to {spoken(after, 3)}"
    if says and not figure:
        return f"It {says}{span}."
    if says:
        return f"It {says}, to {number(ratio, 2)} of what it was{span}."
    if abs(ratio - 1) < 0.005:
        return (
            "It does not change."
            if ratio_only
            else (f"It does not change: {spoken(before, 3)} either way.")
        )
    for k, word in {2: "doubles", 0.5: "halves"}.items():
        if abs(ratio / k - 1) < 0.005:
            return f"It {word}{span}."
    if ratio > 1:
        return f"It grows {number(ratio, 2)} times{span}."
    return f"It falls to {number(ratio, 2)} of what it was{span}."


def _whatif_cards(presets: Presets, chapters: set[str]) -> list[Card]:
    cards = []
    for spec in WHATIFS:
        eq = derivations.get(spec["equation"])
        if eq.chapter not in chapters:
            continue
        before = eq.evaluate(presets=presets, **spec["case"])
        try:
            after = eq.evaluate(presets=presets, **_changed_case(spec, presets)).to(before.units)
        except ChalkboardError as err:
            reason = str(err).split(": ", 2)[-1].split(" (", 1)[0]
            lead = f"It no longer exists: {reason}. Before the change it was {spoken(before, 3)}."
        else:
            lead = _change_words(
                before,
                after,
                spec.get("ratio_only", False),
                spec.get("says", ""),
                spec.get("figure", True),
            )
        names = _names(spec["case"], presets)
        why = spec["why"].format(**names)
        cards.append(
            Card(
                f"whatif:{eq.chapter}:{spec['id']}",
                eq.chapter,
                "whatif",
                spec["front"].format(**names),
                f"{lead}\n\n{why}",
                f"equation {eq.id}",
                fact=spec["fact"],
                case=tuple((k, str(v)) for k, v in spec["case"].items()),
            )
        )
    return cards


# "Which is bigger, and why?": equation, preset kind, the pair, the question, the other
# presets, the fact, and the reason.
COMPARISONS = (
    (
        "kv_bytes_per_token",
        "model",
        "llama_3_1_70b",
        "deepseek_v3",
        "keeps more KV cache per token at BF16",
        {"precision": "bf16"},
        "mla-compression",
        "DeepSeek-V3's multi-head latent attention caches one compressed latent per layer, "
        "whatever its head count; Llama's grouped-query attention caches a key and a value "
        "for each of its KV heads.",
    ),
)


def _comparison_cards(presets: Presets) -> list[Card]:
    cards = []
    for eq_id, kind, a, b, question, fixed, fact, why in COMPARISONS:
        eq = derivations.get(eq_id)
        va = eq.evaluate(presets=presets, **fixed, **{kind: a})
        vb = eq.evaluate(presets=presets, **fixed, **{kind: b}).to(va.units)
        name_a, name_b = short_name(kind, a, presets), short_name(kind, b, presets)
        (winner, high), (_, low) = sorted(
            ((name_a, va), (name_b, vb)), key=lambda p: p[1].magnitude, reverse=True
        )
        factor = (high / low).to("").magnitude
        front = f"Which {question}: {name_a} or {name_b}?"
        back = (
            f"{winner}, about {number(factor, 2)} times as much: {spoken(high, 3)} against "
            f"{spoken(low, 3)}.\n\n{why}"
        )
        cards.append(
            Card(
                f"compare:{eq_id}:{a}:{b}",
                eq.chapter,
                "comparison",
                front,
                back,
                f"equation {eq_id}",
                fact=fact,
            )
        )
    return cards


def _case_label(raw_case: dict, equation: str, presets: Presets) -> str:
    """A claim case as a person names it: chip and model by their short names, and the
    precision whenever the figure depends on it ('A100, BF16'), stated even when it is the
    default; 'the lecture's figures' for a case that names no preset.

    >>> from units.presets import load
    >>> _case_label({"hardware": "a100_sxm"}, "ridge_intensity", load())
    'A100, BF16'
    >>> _case_label({"model": "kimi_k2"}, "scaleup_scaleout_ratio", load())
    'Kimi K2'
    """
    from book.claims import CHOICES

    kinds = {"hardware": "hardware", "model": "model", "api": "api", "tier": "tier"}
    parts = [short_name(kinds[k], raw_case[k], presets) for k in kinds if k in raw_case]
    choices = {k: raw_case[k] for k in CHOICES if k in raw_case}
    overrides = dict(raw_case.get("set", {}))
    precision = choices.get("precision")
    if precision is None and choices:
        eq = derivations.get(equation)
        try:
            values = [
                eq.evaluate(presets=presets, **choices, **overrides, precision=p).magnitude
                for p in ("bf16", "fp8")
            ]
        except ChalkboardError:  # a chip without FP8: its figure is a BF16 one
            values = [0, 1]
        if values[0] != values[1]:
            precision = "bf16"  # the default precision, named since the figure depends on it
    if precision is not None:
        parts.append(str(precision).upper())
    return ", ".join(parts) or "the lecture's figures"


def _claim_cards(presets: Presets, chapters: set[str]) -> list[Card]:
    """The lecture's claims worth a card (``[[claim]]`` in concepts.toml: the fact each tests,
    its reason in a sentence or two, and optionally its verdict line), with the audit's verdict
    and figures. The verdict is one line: the verdict, then what was measured against what."""
    from types import SimpleNamespace

    from book.claims import CLAIMS, audit_claims

    audit = audit_claims(presets)
    doc = tomllib.loads(CLAIMS.read_text(encoding="utf-8"))
    raw, standards = doc["claim"], doc["standard"]
    render = _Templates(presets)
    cards = []
    for entry in _authored().get("claim", ()):
        cid = entry["id"]
        v = audit[cid]
        if v.chapter not in chapters:
            continue
        where = f"concepts.toml claim {cid!r}"
        who = (
            "The lecture says"
            if v.said_by.startswith("lecture")
            else "A published summary of the lecture says"
        )
        cases = [
            SimpleNamespace(
                value=spoken(c.value, 3),
                label=_case_label(r, v.equation, presets),
                inside=c.in_range,
                missed=not c.in_range and v.verdict in ("holds", "partly holds"),
            )
            for c, r in zip(v.cases, raw[cid]["cases"], strict=True)
        ]
        premise = [
            SimpleNamespace(value=spoken(c.value, 3), inside=c.in_range) for c in v.premise_cases
        ]
        if "verdict" in entry:
            # bound: an order-of-magnitude claim's factor either way, as a person says it
            factor = standards[raw[cid]["standard"]].get("within_factor")
            line = render(
                entry["verdict"],
                v.chapter,
                where,
                cases=cases,
                premise=premise,
                claimed=v.expected,
                bound=number(factor, 1) if factor else "",
            )
        else:
            # `hide`: presets whose cases the card leaves out (a figure that adds nothing); a
            # case the claim misses is always shown, against the claimed figure
            hide = set(entry.get("hide", ()))
            line = "; ".join(
                f"{c.value} ({c.label})"
                + (f", against the claimed {v.expected}" if c.missed else "")
                for c, r in zip(cases, raw[cid]["cases"], strict=True)
                if c.missed or not hide & {str(x) for x in r.values()}
            )
            caveat = raw[cid].get("caveat", "") if v.verdict.startswith("holds") else ""
            line = f"{caveat}. {sentence(line)}" if caveat else line
        line = line.rstrip(".") + "."
        # "**Wrong.** The A100 ...", "**Partly holds:** per chip ..."
        mark = "." if v.verdict in ("holds", "wrong") else ":"
        line = sentence(line) if mark == "." else line
        why = render(entry["why"].strip(), v.chapter, where)
        moment = claim_moment(v.said_by)
        at = f"{entry['at']}, does it hold?" if "at" in entry else "Does it hold?"
        cards.append(
            Card(
                f"claim:{v.id}",
                v.chapter,
                "claim",
                f"{who}: *{v.claim}*. {at}",
                f"**{sentence(v.verdict)}{mark}** {line}\n\n{why}",
                f"claim {v.id}",
                fact=entry["fact"],
                covers=tuple(entry.get("covers", ())),
                video=video_link(moment) if moment is not None else "",
            )
        )
    return cards


_H100 = re.compile(r"\bH100(?=s?\b)(?! SXM)")
_FIGURE = re.compile(r"\d")


def _sxm_named(card: Card) -> Card:
    """A card whose figures rest on the H100 names its part once, 'H100 SXM', where it first
    says 'H100': the PCIe and NVL parts read HBM at other speeds.

    >>> _sxm_named(Card("x", "batching", "number", "An H100 drains in?", "23.9 ms.", "")).front
    'An H100 SXM drains in?'
    """
    if not _FIGURE.search(prose_text(card.front + card.back)):
        return card
    for side in ("front", "back"):
        text = getattr(card, side)
        if _H100.search(text):
            return replace(card, **{side: _H100.sub("H100 SXM", text, count=1)})
    return card


def prose_text(text: str) -> str:
    """A side with its math removed."""
    return re.sub(r"\$\$.+?\$\$|\$.+?\$", " ", text, flags=re.S)


_DECKS: dict[tuple, list[Card]] = reads.ReadsDict()  # by preset files, with their reads


def flashcards(presets: Presets | None = None) -> list[Card]:
    """Every card, in chapter order (made once per preset set: the pages and the exports share
    it)."""
    presets = presets or load()
    if presets.files not in _DECKS:
        with reads.recording():
            _DECKS[presets.files] = _flashcards(presets)
    return list(_DECKS[presets.files])


def _flashcards(presets: Presets) -> list[Card]:
    chapters = {c.id for c in derivations.CHAPTERS}
    cards: list[Card] = concept_cards(presets)
    cards += _formula_cards(presets, chapters) + _cloze_cards(presets, chapters)
    cards += _whatif_cards(presets, chapters)
    if "batching" in chapters:
        cards += _number_cards(presets) + _comparison_cards(presets)
    cards += _claim_cards(presets, chapters)
    cards = [_sxm_named(c) for c in cards]
    order = {c.id: i for i, c in enumerate(derivations.CHAPTERS)}
    cards.sort(key=lambda c: order.get(c.chapter, len(order)))
    ids = [c.id for c in cards]
    if len(ids) != len(set(ids)):
        raise ChalkboardError("flashcard ids must be unique")
    return cards


# -- exports -------------------------------------------------------------------------------

DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
INLINE = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$", re.S)


def anki_math(text: str) -> str:
    """``$$x$$`` -> ``\\[x\\]`` and ``$x$`` -> ``\\(x\\)``: the delimiters Anki renders.

    >>> anki_math("a $x$ and $$y$$")
    'a \\\\(x\\\\) and \\\\[y\\\\]'
    """
    text = DISPLAY.sub(lambda m: f"\\[{m.group(1).strip()}\\]", text)
    return INLINE.sub(lambda m: f"\\({m.group(1)}\\)", text)


def site_math(text: str) -> str:
    """Each ``$$x$$`` as a paragraph of its own, where the site's Markdown (arithmatex) shows
    display math; within a line of prose it would read ``$x$`` as inline math between two
    stray dollar signs. Anki shows ``\\[x\\]`` as a block too (:func:`anki_math`).

    >>> site_math("So $$y$$ grows; $x$ too.").split("\\n")
    ['So', '', '$$y$$', '', 'grows; $x$ too.']
    """
    text = DISPLAY.sub(lambda m: f"\n\n$${m.group(1).strip()}$$\n\n", text)
    return re.sub(r"[ \t]*\n(?:[ \t]*\n)+[ \t]*", "\n\n", text).strip()


def _html(text: str) -> str:
    """Markdown-lite to HTML for Anki: bold, italics, code, paragraphs; math left for Anki."""
    import html

    out = html.escape(anki_math(text), quote=False)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"(?<![\\*])\*(?!\*)(.+?)\*", r"<i>\1</i>", out)
    out = re.sub(r"`(.+?)`", r"<code>\1</code>", out)
    return "<br><br>".join(p.strip() for p in out.split("\n\n"))


def _moment_text(url: str) -> str:
    """'15:16' for a link at 916 s."""
    seconds = int(url.rsplit("t=", 1)[1].rstrip("s"))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _anki_extra(card: Card) -> str:
    """The figure and the lecture link under an Anki answer."""
    parts = []
    if card.figure:
        parts.append(
            f'<img src="{media_name(card.figure)}" '
            'style="width:100%;max-width:36em;background:#fff;border-radius:4px">'
        )
    if card.video:
        parts.append(f'<a href="{card.video}">The lecture at {_moment_text(card.video)}</a>')
    return "<br><br>".join(parts)


def shown_source(card: Card) -> str:
    """The source line under an Anki answer, as a student reads it: the book and the card's
    chapter ('Chalkboard: Long context and API pricing'), never an internal id.

    >>> shown_source(Card("x", "batching", "concept", "Q?", "A.", "equation hbm_drain_time"))
    'Chalkboard: Batch size, cost and latency'
    """
    titles = {c.id: c.title for c in derivations.CHAPTERS}
    return f"Chalkboard: {titles.get(card.chapter, card.chapter)}"


DECK_ID = 1_741_955_120  # fixed: a rebuilt package updates the same deck
MODEL_ID = 1_741_955_121
CLOZE_MODEL_ID = 1_741_955_122
DECK_NAME = "Chalkboard: the math of training and serving LLMs"


def guid(card: Card) -> str:
    """The card's Anki note GUID, from its stable id (the Study page keys progress by it too)."""
    import genanki

    return genanki.guid_for("chalkboard", card.id)


def media_name(fig_id: str) -> str:
    """A figure's file name in the Anki package's media."""
    return f"chalkboard-{fig_id}.svg"


def figure_file(fig_id: str, presets: Presets) -> str:
    """A figure as a file of its own: the site's inline SVG, its text and lines in a dark grey
    (an image takes no colour from the page), sized by its viewBox."""
    from book.figures import drawn

    svg = drawn(fig_id, presets).svg.replace("currentColor", "#222222")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + svg + "\n"


def _models():
    import genanki

    basic = genanki.Model(
        MODEL_ID,
        "Chalkboard card",
        fields=[{"name": "Front"}, {"name": "Back"}, {"name": "Source"}, {"name": "Id"}],
        templates=[
            {
                "name": "Card",
                "qfmt": "{{Front}}",
                "afmt": '{{FrontSide}}<hr id="answer">{{Back}}<br><small>{{Source}}</small>',
            }
        ],
        sort_field_index=3,
    )
    cloze = genanki.Model(
        CLOZE_MODEL_ID,
        "Chalkboard cloze",
        fields=[{"name": "Text"}, {"name": "Extra"}, {"name": "Source"}, {"name": "Id"}],
        templates=[
            {
                "name": "Cloze",
                "qfmt": "{{cloze:Text}}",
                "afmt": "{{cloze:Text}}<br><br>{{Extra}}<br><small>{{Source}}</small>",
            }
        ],
        model_type=genanki.Model.CLOZE,
        sort_field_index=3,
    )
    return basic, cloze


def write_apkg(cards: list[Card], path, presets: Presets | None = None) -> None:
    """An Anki package: one note per card (one cloze note per group of cloze cards), its GUID
    derived from the stable id, so a rebuilt deck updates notes (keeping review history)
    instead of duplicating them. The figures on card backs go in as media files."""
    import tempfile

    import genanki

    basic, cloze = _models()
    deck = genanki.Deck(DECK_ID, DECK_NAME)
    done = set()
    for c in cards:
        extra = _anki_extra(c)
        if c.note:
            if c.note in done:
                continue
            done.add(c.note)
            group = [o for o in cards if o.note == c.note]
            says = "<br>".join(_html(o.back.split("\n\n")[0]) for o in group)
            fields = [_html(c.cloze), "<br><br>".join(filter(None, [says, extra])), shown_source(c)]
            note = genanki.Note(
                model=cloze,
                fields=[*fields, c.note],
                guid=genanki.guid_for("chalkboard", c.note),
                tags=[c.chapter, c.kind],
            )
        else:
            back = "<br><br>".join(filter(None, [_html(c.back), extra]))
            note = genanki.Note(
                model=basic,
                fields=[_html(c.front), back, shown_source(c), c.id],
                guid=guid(c),
                tags=[c.chapter, c.kind],
            )
        deck.add_note(note)
    figures = sorted({c.figure for c in cards if c.figure})
    # genanki writes the collection to a temporary file it never removes: give it a folder of
    # its own and remove that (the media files are written there too)
    saved = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="chalkboard-anki-") as private:
        media = []
        for fig_id in figures:
            file = Path(private) / media_name(fig_id)
            file.write_text(figure_file(fig_id, presets or load()), encoding="utf-8")
            media.append(str(file))
        tempfile.tempdir = private
        try:
            genanki.Package(deck, media_files=media).write_to_file(str(path))
        finally:
            tempfile.tempdir = saved


def write_tsv(cards: list[Card], path) -> None:
    """Front, back, id, chapter, kind: tab-separated, newlines as <br>, Anki-importable."""

    def clean(text: str) -> str:
        return anki_math(text).replace("\t", " ").replace("\n", "<br>")

    def back(c: Card) -> str:
        if not c.video:
            return clean(c.back)
        return (
            clean(c.back)
            + f'<br><br><a href="{c.video}">The lecture at {_moment_text(c.video)}</a>'
        )

    lines = ["#separator:tab", "#html:true", "#columns:Front\tBack\tId\tChapter\tKind"]
    lines += ["\t".join([clean(c.front), back(c), c.id, c.chapter, c.kind]) for c in cards]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_json(cards: list[Card], path) -> None:
    import json

    path.write_text(json.dumps([c.to_dict() for c in cards], indent=1) + "\n", encoding="utf-8")


def write_exports(folder, presets: Presets | None = None) -> list:
    """flashcards.apkg, .tsv and .json into ``folder``; returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    presets = presets or load()
    cards = flashcards(presets)
    paths = [folder / f"flashcards.{ext}" for ext in ("apkg", "tsv", "json")]
    write_apkg(cards, paths[0], presets)
    write_tsv(cards, paths[1])
    write_json(cards, paths[2])
    return paths


# -- the site's pages ------------------------------------------------------------------------


def card_pages(presets: Presets) -> dict:
    """One page per chapter plus an index: output path -> (template, context)."""
    deck = flashcards(presets)
    pages, per_chapter = {}, []
    for chapter in derivations.CHAPTERS:
        cards = [
            _on_site(c, presets, anchor=c.id.replace(":", "-"))
            for c in deck
            if c.chapter == chapter.id
        ]
        pages[f"cards/{chapter.id}.md"] = (
            "cards/chapter.md.j2",
            {"chapter": chapter, "cards": cards},
        )
        per_chapter.append({"id": chapter.id, "title": chapter.title, "count": len(cards)})
    pages["cards/index.md"] = ("cards/index.md.j2", {"chapters": per_chapter, "total": len(deck)})
    pages["study.md"] = ("cards/study.md.j2", study_context(deck, presets))
    return pages


def _on_site(card: Card, presets: Presets, **extra) -> dict:
    """A card's fields for a site page, its math delimited for the site's Markdown: the
    figure's HTML (``figure``, empty when none), its id (``figure_id``), the lecture link
    (``video``) and the moment it names (``video_at``)."""
    from book.figures import drawn

    return dict(
        card.to_dict(),
        front=site_math(card.front),
        back=site_math(card.back),
        figure=drawn(card.figure, presets).html if card.figure else "",
        figure_id=card.figure,
        video=card.video,
        video_at=_moment_text(card.video) if card.video else "",
        **extra,
    )


def study_context(deck: list[Card], presets: Presets | None = None) -> dict:
    """The Study page's deck: every card with the GUID its Anki note has (progress is kept by
    GUID, so it survives rebuilds), and the chapters to filter by."""
    presets = presets or load()
    return {
        "chapters": derivations.CHAPTERS,
        "cards": [_on_site(c, presets, guid=guid(c)) for c in deck],
    }
