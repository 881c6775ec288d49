"""The jinja2 environment every page and card is rendered with (the bottom of the write stage:
products render templates through it, the site writes what they render).

>>> environment().from_string("{{ 'n chips share it' | sentence }}").render()
'n chips share it'
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from book.format import Said, markdown_text, prose, sentence
from book.lecture import moment

TEMPLATES = Path(__file__).resolve().parent / "templates"


def lower_first(text: str) -> str:
    """'The step time' -> 'the step time' (a title used inside a sentence); 'HBM ...' is kept."""
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def spoken_in_prose(value):
    """What a template prints for ``{{ value }}``: a :class:`~book.format.Said` figure as a
    sentence says it; anything else as it is."""
    return value.said if isinstance(value, Said) else value


def environment() -> jinja2.Environment:
    """The book's environment; a template compiled by an earlier build is read from the build
    cache (book/buildcache.py), not compiled again."""
    from book.buildcache import template_cache

    env = jinja2.Environment(
        bytecode_cache=template_cache(),
        finalize=spoken_in_prose,
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["sentence"] = sentence
    env.filters["lower_first"] = lower_first
    env.filters["markdown_text"] = markdown_text
    env.filters["prose"] = prose
    env.globals["moment"] = moment  # {{ moment("15:16") }}: a link to the lecture's video there
    return env
