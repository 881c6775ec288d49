"""Flashcards generated from the equation catalogue, the presets and the claims audit.

Each card has a stable id (``eq:crossover_batch:statement``), a chapter, a front and a back in
Markdown with ``$...$`` math, and the equation, preset or claim it comes from. Kinds: an
equation's statement; its derivation's key step; which of its terms dominates on a reference
case; a worked number on presets; and each claim of the lecture with its verdict.

>>> cards = flashcards()
>>> len(cards) >= 3 * 27
True
>>> next(c for c in cards if c.id == "eq:crossover_batch:statement").chapter
'batching'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import derivations
from book.cases import PRESET_KINDS, REFERENCE, precision_words, reference_case  # noqa: F401 (public names)
from book.format import given_text, markdown_text, prose, quantity, sentence
from derivations.core import Equation
from units import ChalkboardError
from units.presets import Presets, load


@dataclass(frozen=True)
class Card:
    id: str
    chapter: str
    kind: str
    front: str
    back: str
    source: str

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("id", "chapter", "kind", "front", "back", "source")}


NAMED_KINDS = ("hardware", "model", "api", "tier", "fit")  # presets shown by their names


def _describe(kw: dict, presets: Presets) -> str:
    parts = [presets.get(k, v).name for k, v in kw.items() if k in NAMED_KINDS]
    if precision_words(kw):
        parts.append(precision_words(kw))
    given = [given_text(k, v) for k, v in kw.items() if k not in PRESET_KINDS]
    return ", ".join(parts + given) or "the lecture's figures"


def _command(eq: Equation, kw: dict) -> str:
    flags = [f"--{k.replace('_', '-')} {v}" for k, v in kw.items() if k in PRESET_KINDS]
    sets = [f"--set {k}='{v}'" for k, v in kw.items() if k not in PRESET_KINDS]
    return " ".join(["chalkboard eval", eq.id, *flags, *sets])


def _statement(eq: Equation) -> Card:
    title = markdown_text(eq.title)
    front = f"**{title}.** Write ${eq.lhs.latex}$ ({eq.lhs.meaning}) in terms of its inputs."
    back = f"$${eq.latex()}$$\n\n{prose(eq.summary)}"
    return Card(f"eq:{eq.id}:statement", eq.chapter, "statement", front, back, f"equation {eq.id}")


def _key_step(eq: Equation) -> Card | None:
    if eq.derivation is None or len(eq.derivation.steps) < 2:
        return None
    steps = [s for s in eq.derivation.steps[1:] if s.kind != "rename"]
    step = steps[-1] if steps else eq.derivation.steps[-1]
    first = eq.derivation.steps[0]
    front = (
        f"**{markdown_text(eq.title)}: the key step.** Starting from "
        f"${derivations.to_latex(first.relation)}$ ({prose(first.why)}), "
        "what step leads to the result?"
    )
    back = f"{sentence(step.why)}:\n\n$${derivations.to_latex(step.relation)}$$"
    return Card(f"eq:{eq.id}:key_step", eq.chapter, "derivation", front, back, f"equation {eq.id}")


def _dominance(eq: Equation, kw: dict, presets: Presets) -> Card | None:
    from derivations.algebra import split_terms

    parts = split_terms(eq)
    if not parts or kw is None:
        return None
    try:
        values = [part.evaluate(presets=presets, **kw) for part in parts]
    except ChalkboardError:
        return None
    if any(v.magnitude <= 0 for v in values):
        return None
    terms = [part.rhs for part in parts]
    shown = [
        f"${derivations.to_latex(t)}$ = {quantity(v)}" for t, v in zip(terms, values, strict=True)
    ]
    top = max(range(len(values)), key=lambda i: values[i])
    title = markdown_text(eq.title)
    front = f"**{title}.** Which term of ${eq.latex()}$ dominates for {_describe(kw, presets)}?"
    back = (
        f"${derivations.to_latex(terms[top])}$.\n\n" + "; ".join(shown) + ".\n\n"
        f"Reproduce: `{_command(eq, kw)}`"
    )
    return Card(f"eq:{eq.id}:dominant", eq.chapter, "dominance", front, back, f"equation {eq.id}")


def _number(eq: Equation, kw: dict, presets: Presets) -> Card | None:
    if kw is None:
        return None
    value = eq.evaluate(presets=presets, **kw)
    front = f"Estimate {eq.lhs.meaning} (${eq.lhs.latex}$) for {_describe(kw, presets)}."
    back = f"{quantity(value)}, from ${eq.latex()}$.\n\nReproduce: `{_command(eq, kw)}`"
    return Card(f"eq:{eq.id}:number", eq.chapter, "number", front, back, f"equation {eq.id}")


def _claim_cards(presets: Presets) -> list[Card]:
    from book.claims import audit_claims

    cards = []
    for v in audit_claims(presets).values():
        computed = "; ".join(f"{quantity(c.value)} ({c.label})" for c in v.cases)
        extra = f" {v.caveat[:1].upper()}{v.caveat[1:]}." if v.caveat else ""
        front = f"The claim: *{v.claim}* ({v.said_by}). Does it hold?"
        back = f"**{v.verdict[:1].upper()}{v.verdict[1:]}.** Computed: {computed}.{extra}"
        cards.append(Card(f"claim:{v.id}", v.chapter, "claim", front, back, f"claim {v.id}"))
    return cards


TAKEAWAYS = re.compile(r'^!!! abstract "Takeaways"\n((?:    .*\n|\n)+)', re.M)


def takeaway_cards(chapter, presets: Presets) -> list[Card]:
    """Concept cards from the chapter page's takeaways: the bold claim on the front, its
    computed support on the back. The page is rendered from the equations, so are the cards."""
    from book.chapter_pages import chapter_page_context as chapter_context
    from book.templating import TEMPLATES, environment

    template = f"chapters/{chapter.id}.md.j2"
    if not (TEMPLATES / template).exists():
        return []
    page = environment().get_template(template).render(**chapter_context(chapter.id, presets))
    match = TAKEAWAYS.search(page)
    if not match:
        return []
    bullets = re.split(r"\n    - ", "\n" + match.group(1).rstrip())
    cards = []
    for i, bullet in enumerate(b for b in bullets if b.strip()):
        text = " ".join(line.strip() for line in bullet.splitlines())
        lead = re.match(r"\*\*(.+?)\*\*\s*(.*)", text)
        if not lead or not lead.group(2):
            continue
        front = f"*{chapter.title}*: why, and by how much? **{lead.group(1)}**"
        cards.append(
            Card(
                f"takeaway:{chapter.id}:{i + 1}",
                chapter.id,
                "concept",
                front,
                lead.group(2),
                f"chapter {chapter.id}",
            )
        )
    return cards


def flashcards(presets: Presets | None = None) -> list[Card]:
    """Every card, in chapter order."""
    presets = presets or load()
    cards: list[Card] = []
    for chapter in derivations.CHAPTERS:
        cards += takeaway_cards(chapter, presets)
        for eq in derivations.equations(chapter.id):
            cards.append(_statement(eq))
            if (step := _key_step(eq)) is not None:
                cards.append(step)
            if not eq.evaluable:
                continue
            kw = reference_case(eq, presets)
            for make in (_dominance, _number):
                if (card := make(eq, kw, presets)) is not None:
                    cards.append(card)
    cards += _claim_cards(presets)
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


def _html(text: str) -> str:
    """Markdown-lite to HTML for Anki: bold, italics, code, paragraphs; math left for Anki."""
    import html

    out = html.escape(anki_math(text), quote=False)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"(?<![\\*])\*(?!\*)(.+?)\*", r"<i>\1</i>", out)
    out = re.sub(r"`(.+?)`", r"<code>\1</code>", out)
    return "<br><br>".join(p.strip() for p in out.split("\n\n"))


DECK_ID = 1_741_955_120  # fixed: a rebuilt package updates the same deck
MODEL_ID = 1_741_955_121
DECK_NAME = "Chalkboard: the math of training and serving LLMs"


def write_apkg(cards: list[Card], path) -> None:
    """An Anki package: one note per card, its GUID derived from the card's stable id, so a
    rebuilt deck updates notes (keeping review history) instead of duplicating them."""
    import genanki

    model = genanki.Model(
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
    deck = genanki.Deck(DECK_ID, DECK_NAME)
    for c in cards:
        deck.add_note(
            genanki.Note(
                model=model,
                fields=[_html(c.front), _html(c.back), c.source, c.id],
                guid=genanki.guid_for("chalkboard", c.id),
                tags=[c.chapter, c.kind],
            )
        )
    genanki.Package(deck).write_to_file(str(path))


def write_tsv(cards: list[Card], path) -> None:
    """Front, back, id, chapter, kind: tab-separated, newlines as <br>, Anki-importable."""

    def clean(text: str) -> str:
        return anki_math(text).replace("\t", " ").replace("\n", "<br>")

    lines = ["#separator:tab", "#html:true", "#columns:Front\tBack\tId\tChapter\tKind"]
    lines += ["\t".join([clean(c.front), clean(c.back), c.id, c.chapter, c.kind]) for c in cards]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_json(cards: list[Card], path) -> None:
    import json

    path.write_text(json.dumps([c.to_dict() for c in cards], indent=1) + "\n", encoding="utf-8")


def write_exports(folder, presets: Presets | None = None) -> list:
    """flashcards.apkg, .tsv and .json into ``folder``; returns the paths."""
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cards = flashcards(presets)
    paths = [folder / f"flashcards.{ext}" for ext in ("apkg", "tsv", "json")]
    for writer, path in zip((write_apkg, write_tsv, write_json), paths, strict=True):
        writer(cards, path)
    return paths


# -- the site's pages ------------------------------------------------------------------------

# Cards a figure helps with: the figure is shown with the question.
CARD_FIGURES = {
    "eq:step_time:dominant": "latency_vs_batch",
    "eq:cost_per_token:statement": "cost_vs_batch",
    "eq:ridge_intensity:statement": "roofline",
    "eq:memory_per_gpu:statement": "memory_vs_stages",
    "eq:pipeline_bubble_fraction:statement": "pipeline_bubble",
    "eq:chinchilla_loss:statement": "chinchilla_contours",
    "eq:storage_tier_drain_time:statement": "drain_ladder",
}


def card_pages(presets: Presets) -> dict:
    """One page per chapter plus an index: output path -> (template, context)."""
    from book.figures import drawn

    deck = flashcards(presets)
    pages, per_chapter = {}, []
    for chapter in derivations.CHAPTERS:
        cards = [
            dict(
                c.to_dict(),
                anchor=c.id.replace(":", "-"),
                figure=drawn(CARD_FIGURES[c.id], presets).html if c.id in CARD_FIGURES else "",
            )
            for c in deck
            if c.chapter == chapter.id
        ]
        pages[f"cards/{chapter.id}.md"] = (
            "cards/chapter.md.j2",
            {"chapter": chapter, "cards": cards},
        )
        per_chapter.append({"id": chapter.id, "title": chapter.title, "count": len(cards)})
    pages["cards/index.md"] = ("cards/index.md.j2", {"chapters": per_chapter, "total": len(deck)})
    return pages
