"""book/search_parser.py: its parser divides a page into the same sections, with the same title
and text, as Material's search parser, on the cases its bookkeeping turns on and on random
nests of them; and it stands in for Material's only while Material's parser is the one it
follows."""

import random

from material.plugins.search import plugin as material

from book import search_parser
from book.search_parser import FastParser

CASES = [
    # a preface, then sections; a permalink in a heading; kept and other tags
    '<p>before</p><h1 id="a">Top<a class="headerlink" href="#a">¶</a></h1><p>x <em>y</em></p>'
    '<h2 id="b">Sub</h2><ul><li>one</li><li> </li></ul><p><code>c</code> <sub>2</sub></p>',
    # a first heading below h1, a heading without an id, a heading nested in a div
    '<h2 id="b">Sub</h2><h3>no id</h3><div><h2 id="c">In a div</h2><p>in</p></div><p>after</p>',
    # excluded formulas, one nested in another element of the same tag, spans after them
    '<p>a <span class="arithmatex" data-search-exclude>\\(x\\)</span> b '
    "<span>kept</span></p>"
    "<p><span data-search-exclude>out <span>inner</span> still</span> in</p>"
    "<div data-search-exclude><div>gone</div><p>back?</p></div><p>tail</p>",
    # whitespace: runs collapse outside pre, stay inside; empty kept tags are dropped
    "<p>a\n\nb</p>  \n  <p>   </p><pre><code>x = 1\n\n  y</code></pre><p>\n</p>",
    # script, style and object are skipped, also when excluded or nested
    "<p>a<script>var x = '<p>';</script>b<style>p{}</style><object>o</object></p>"
    "<script data-search-exclude>s</script><p>after</p>",
    # line numbers, void tags, unclosed and stray tags, entities
    '<div class="linenodiv"><pre>1\n2</pre></div><p>a<br>b<img src="i.png">c</p>'
    "<p>open <em>never closed</p></div><p>&amp; &lt;tag&gt; &#x27;q&#x27;</p>",
    # an SVG figure's text
    '<figure><svg viewBox="0 0 1 1"><style>*{x: y}</style><g><text>tokens per s</text>'
    '<path d="M 0 0" /></g></svg><figcaption>The figure.</figcaption></figure>',
    # an excluded heading; a heading inside a title
    '<h1 id="t" data-search-exclude>Hidden</h1><p>x</p><h2 id="u">A <code>b</code></h2>',
]

TAGS = ["p", "span", "div", "pre", "code", "li", "ul", "em", "a", "script", "style", "h1"]
TAGS += ["h2", "h3", "g", "text", "br", "img", "sub", "object"]
ATTRS = ["", " data-search-exclude", ' class="linenodiv"', ' class="headerlink"', ' id="s"']
TEXTS = ["word", " ", "\n", "two  words\n", "&amp;", "<", ""]


def _random_html(rng: random.Random, depth: int = 0) -> str:
    out = []
    for _ in range(rng.randint(0, 4)):
        choice = rng.random()
        if choice < 0.4 or depth > 5:
            out.append(rng.choice(TEXTS))
        else:
            tag = rng.choice(TAGS)
            attrs = rng.choice(ATTRS) if rng.random() < 0.4 else ""
            out.append(f"<{tag}{attrs}>{_random_html(rng, depth + 1)}")
            if rng.random() < 0.9:  # sometimes left open
                out.append(f"</{rng.choice(TAGS) if rng.random() < 0.1 else tag}>")
    return "".join(out)


def _sections(parser_class, html: str) -> list:
    """The sections read from ``html``, or the error reading it raised (Material's parser
    fails on some malformed nests, such as a kept tag closed in another section)."""
    parser = parser_class()
    try:
        parser.feed(html)
        parser.close()
    except ValueError as error:
        return [("error", str(error))]
    return [
        (s.el.tag, dict(s.el.attrs), s.id, s.depth, s.title, s.text, s.is_excluded())
        for s in parser.data
    ]


def test_the_sections_are_materials_on_each_case():
    for html in CASES:
        assert _sections(FastParser, html) == _sections(material.Parser, html), html


def test_the_sections_are_materials_on_random_nests():
    rng = random.Random(23)
    for _ in range(3000):
        html = _random_html(rng)
        assert _sections(FastParser, html) == _sections(material.Parser, html), html


def test_it_stands_in_only_for_the_parser_it_follows(monkeypatch):
    """An upgraded Material fails here: compare its parser with FastParser, then update the
    digest."""
    assert search_parser.material_parser_digest() == search_parser.MATERIAL_PARSER
    index = material.SearchIndex(lang=["en"], separator="", pipeline=[], fields={})
    assert search_parser.install(index)
    assert "add_entry_from_context" in vars(index)

    monkeypatch.setattr(search_parser, "MATERIAL_PARSER", "another version")
    index = material.SearchIndex(lang=["en"], separator="", pipeline=[], fields={})
    assert not search_parser.install(index)
    assert "add_entry_from_context" not in vars(index)
