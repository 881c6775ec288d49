"""Material's search parser with its bookkeeping made cheap: the same sections, the same text.

Material's search plugin (``material.plugins.search.plugin.Parser``) reads every page's HTML,
figures' SVG included, and splits it into sections. For every tag and every run of text it asks
whether an element being skipped is open (``skip.intersection(context)``: one Python-level
``__hash__`` and ``__eq__`` per open element) and whether the section's heading or a ``<pre>``
is open (a scan of the open elements, ``__eq__`` each); that bookkeeping costs more than
HTMLParser's own tokenizing.

Material's elements compare and hash by their tag alone, so each of those questions asks only
whether an element with a given tag is open, and its skip set behaves as a set of tags.
:class:`FastParser` keeps a count of the open elements by tag, and of those whose tag is
skipped, and answers from them; nor does it count the lines and columns it has read, which
nothing asks for. The rest is Material's code. :func:`install` makes a search index use it,
only when Material's parser is the one this was written from (:data:`MATERIAL_PARSER`, the
digest of its source); otherwise the index keeps Material's own.

>>> html = '<h1 id="a">Cost</h1><p>per <span data-search-exclude>x</span> token</p>'
>>> parser = FastParser()
>>> parser.feed(html)
>>> parser.close()
>>> [("".join(s.title), "".join(s.text)) for s in parser.data]
[('Cost', '<p>per  token</p>')]
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from html import escape

from material.plugins.search import plugin as material

# sha256 of Material's Parser and Element source (mkdocs-material 9.8.2), which FastParser follows
MATERIAL_PARSER = "e3ee9a7916e02c1233e9c06a191d701340b44eafc4d183458637e58f1d254b31"

HEADINGS = frozenset(f"h{x}" for x in range(1, 7))
ALWAYS_SKIPPED = ("script", "style", "object")
Element, Section, void = material.Element, material.Section, material.void


@functools.cache
def material_parser_digest() -> str:
    source = inspect.getsource(material.Element) + inspect.getsource(material.Parser)
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


class FastParser(material.Parser):
    """``material.Parser`` answering "is an element with this tag open?" from counts.

    ``skip`` holds tags (Material's holds strings and elements, equal by tag), ``_open`` the
    number of open elements by tag; ``context`` is Material's list of open elements."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._open: dict[str, int] = {}
        self._skipped = 0  # open elements whose tag is in skip: Material's skip.intersection

    def updatepos(self, i, j):
        return j  # the line and column of the parse (getpos): nothing here reads them

    # Material's handle_starttag, handle_endtag and handle_data, with the questions about the
    # open elements answered from self._open
    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)

        # Ignore self-closing tags
        el = Element(tag, attrs)
        if tag in void:
            return
        self.context.append(el)
        self._open[tag] = self._open.get(tag, 0) + 1
        if tag in self.skip:
            self._skipped += 1

        # Handle heading
        if tag in HEADINGS:
            depth = len(self.context)
            if "id" in attrs:
                # Ensure top-level section
                if tag != "h1" and not self.data:
                    self.section = Section(Element("hx"), depth)
                    self.data.append(self.section)

                # Set identifier, if not first section
                self.section = Section(el, depth)
                if self.data:
                    self.section.id = attrs["id"]

                # Append section to list
                self.data.append(self.section)

        # Handle preface - ensure top-level section
        if not self.section:
            self.section = Section(Element("hx"))
            self.data.append(self.section)

        # Skip block if explicitly excluded from search, and line numbers
        if "data-search-exclude" in attrs or attrs.get("class") == "linenodiv":
            if tag not in self.skip:
                self.skip.add(tag)
                self._skipped += self._open[tag]
            return

        # Render opening tag if kept
        if tag in self.keep and not self._skipped:
            # Check whether we're inside the section title
            data = self.section.text
            if self._open.get(self.section.el.tag):
                data = self.section.title

            # Append to section title or text
            data.append(f"<{tag}>")

    def handle_endtag(self, tag):
        if not self.context or self.context[-1].tag != tag:
            return

        # Check whether we're exiting the current context (Material's comment: a headline
        # nested in another element closes its section)
        if self.section.depth > len(self.context):
            for section in reversed(self.data):
                if section.depth <= len(self.context):
                    self.section.depth = float("inf")
                    self.section = section
                    break

        # Remove element from skip list
        self.context.pop()
        self._open[tag] -= 1
        if tag in self.skip:
            self._skipped -= 1
            if tag not in ALWAYS_SKIPPED:
                self.skip.remove(tag)
                self._skipped -= self._open[tag]
            return

        # Render closing tag if kept
        if tag in self.keep and not self._skipped:
            # Check whether we're inside the section title
            data = self.section.text
            if self._open.get(self.section.el.tag):
                data = self.section.title

            # Search for corresponding opening tag
            index = data.index(f"<{tag}>")
            for i in range(index + 1, len(data)):
                if not data[i].isspace():
                    index = len(data)
                    break

            # Remove element if empty (or only whitespace)
            if len(data) > index:
                while len(data) > index:
                    data.pop()

            # Append to section title or text
            else:
                data.append(f"</{tag}>")

    def handle_data(self, data):
        if self._skipped:
            return

        # Collapse whitespace in non-pre contexts
        pre = self._open.get("pre")
        if not pre:
            if not data.isspace():
                data = data.replace("\n", " ")
            else:
                data = " "

        # Handle preface - ensure top-level section
        if not self.section:
            self.section = Section(Element("hx"))
            self.data.append(self.section)

        # Handle section headline
        if self._open.get(self.section.el.tag):
            permalink = False
            for el in self.context:
                if el.tag == "a" and el.attrs.get("class") == "headerlink":
                    permalink = True

            # Ignore permalinks
            if not permalink:
                self.section.title.append(escape(data, quote=False))

        # Collapse adjacent whitespace
        elif data.isspace():
            if not self.section.text or not self.section.text[-1].isspace() or pre:
                self.section.text.append(data)

        # Handle everything else
        else:
            self.section.text.append(escape(data, quote=False))


def install(index) -> bool:
    """Make Material's search index ``index`` read pages with :class:`FastParser` (what its
    ``add_entry_from_context`` does, with the other parser); False, and ``index`` left as it
    is, when Material's parser is not the one FastParser follows."""
    if not isinstance(index, material.SearchIndex) or material_parser_digest() != MATERIAL_PARSER:
        return False

    def add_entry_from_context(page):
        search = page.meta.get("search") or {}
        if search.get("exclude"):
            return

        # Divide page content into sections
        parser = FastParser()
        parser.feed(page.content)
        parser.close()

        # Add sections to index
        for section in parser.data:
            if not section.is_excluded():
                index.create_entry_for_section(section, page.toc, page.url, page)

    index.add_entry_from_context = add_entry_from_context
    return True
