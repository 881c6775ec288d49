"""What a reader must never trip on in the book's text (issue 12): shared by the format tests.

``problems(text)`` lists the offending snippets of one page's reader-facing text: code, math and
HTML tags are removed first, so identifiers in `code` and LaTeX in $math$ are not prose.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

CODE_FENCE = re.compile(r"^([ \t]*)(```|~~~).*?^\1\2", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)
PRE = re.compile(r"<(pre|code|script|style|kbd)\b.*?</\1>", re.DOTALL | re.IGNORECASE)
KATEX = re.compile(r'<span class="katex">.*?</span></span></span>(?=[^<]*)', re.DOTALL)
TAG = re.compile(r"<[^>]+>")
ANCHOR = re.compile(r"\]\([^)]*\)|\{:[^}]*\}")  # link targets and attribute lists

RULES = {
    "machine unit": re.compile(r"\b(Gparam|Gparameter|Mtok|Gtok|tok|seq|val|param)\b"),
    "squared FLOP": re.compile(r"FLOP\*\*\d"),
    "e-notation": re.compile(r"\b\d+(?:\.\d+)?e[+-]?\d+\b"),
    "huge prefix": re.compile(r"\d [ZY](?:FLOP|B|USD|tok)\b"),
    "long digit string": re.compile(r"\b\d{1,3}(?:,\d{3}){2,}\b|\b\d{8,}\b"),
    "negative zero or nines": re.compile(r"-0(?:\.0+)?(?![.,\d])|\.\d*9{6,}"),
    "raw math": re.compile(r"\bsqrt\(|\b1/[a-z]{2,}\b|\b[a-zA-Z]_[a-z]{1,5}\b"),
}


DECIMAL = re.compile(r"(?<![\w.])(?!\d{4}\.\d{5}\b)\d[\d,]*\.\d+(?![\w.])")  # not arXiv ids


def _digits(number: str) -> int:
    """Significant figures of a decimal: '0.06851' -> 4, '1,625.5' -> 5."""
    return len(number.replace(",", "").replace(".", "").lstrip("0"))


class _KatexDropper(HTMLParser):
    """Re-emits an HTML page without the contents of KaTeX's typeset math."""

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.out: list[str] = []
        self.depth = 0  # open elements inside a .katex span

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if self.depth or "katex" in classes or "katex-display" in classes:
            self.depth += tag not in VOID
            return
        self.out.append(self.get_starttag_text() or "")

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1
            return
        self.out.append(f"</{tag}>")

    def handle_data(self, data):
        if not self.depth:
            self.out.append(data)

    def handle_entityref(self, name):
        self.handle_data(f"&{name};")

    def handle_charref(self, name):
        self.handle_data(f"&#{name};")


VOID = {"br", "img", "input", "hr", "meta", "link", "source", "wbr", "area", "col", "embed"}


def _drop_katex(text: str) -> str:
    if 'class="katex' not in text:
        return text
    parser = _KatexDropper()
    parser.feed(text)
    parser.close()
    return "".join(parser.out)


def reader_text(page: str) -> str:
    """The prose of a Markdown or HTML page: no code, math, tags or link targets."""
    text = CODE_FENCE.sub(" ", page)
    text = PRE.sub(" ", text)
    text = CODE_SPAN.sub(" ", text)
    text = MATH.sub(" ", text)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.DOTALL)
    text = _drop_katex(text)
    text = re.sub(r"\b(aria-label|alt|title)=\"([^\"]*)\"", r"> \2 <", text)
    text = TAG.sub(" ", text)
    text = ANCHOR.sub(" ", text)
    return html.unescape(text)


def problems(page: str, skip=()) -> list[str]:
    """Every broken rule in ``page``; ``skip`` names rules that do not apply (the CLI prints
    symbol names, the identifiers a user types, so "raw math" is not checked there)."""
    text = reader_text(page)
    found = [f"spurious precision: {m[0]}" for m in DECIMAL.finditer(text) if _digits(m[0]) > 4]
    for rule, pattern in RULES.items():
        if rule in skip:
            continue
        for m in pattern.finditer(text):
            around = text[max(m.start() - 40, 0) : m.end() + 20].replace("\n", " ")
            found.append(f"{rule}: …{around}…")
    return found
