"""What the MkDocs pass of a build repeats unchanged, kept on disk between builds
(``units.diskcache``: the user's own sealed store; ``CHALKBOARD_CACHE=0`` turns it off).

- :class:`MarkdownCache`: a page's HTML, table of contents and anchors, by the hash of its
  Markdown, its place in the site and every file's address (links are checked and rewritten
  against them); stored only from a render that logged no warning, so a strict build still
  stops on the same warning. A page of the API reference is keyed on the library's source too,
  and what mkdocstrings registered while rendering it is registered again when it is read.
- :class:`SearchCache`: the search plugin's entries of a page, by the hash of what it reads
  from the page (its HTML, address, title, metadata and table of contents).
- :class:`TemplateCache`: jinja2's compiled templates (the book's, the theme's), by the hash
  of their source and of the environment's options.

Each store's version names the libraries and the code whose output it holds; a new version
starts empty.

>>> from mkdocs.structure.toc import AnchorLink, TableOfContents
>>> top = AnchorLink("Cost", "cost", 1)
>>> top.children.append(AnchorLink("Batch", "batch", 2))
>>> toc = toc_from_data(toc_data(TableOfContents([top])))
>>> [(a.title, a.id, a.level, [c.id for c in a.children]) for a in toc]
[('Cost', 'cost', 1, ['batch'])]
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import sys
from importlib import metadata
from pathlib import Path

import jinja2

from units import diskcache

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MARKDOWN_LIBRARIES = (
    "mkdocs",
    "markdown",
    "pymdown-extensions",
    "mkdocs-material",
    "mkdocstrings",
    "mkdocstrings-python",
    "griffelib",
    "griffe",
    "mkdocs-autorefs",
)


def _versions(*names: str) -> list[str]:
    found = []
    for name in names:
        try:
            found.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name}=absent")
    return found


# -- Markdown -> HTML ---------------------------------------------------------------------------


def toc_data(toc) -> list:
    """A page's table of contents as JSON-able lists."""
    return [[a.title, a.id, a.level, toc_data(a.children)] for a in toc]


def toc_from_data(data: list):
    """:func:`toc_data` read back into mkdocs' TableOfContents (its first item active, as
    mkdocs makes it)."""
    from mkdocs.structure.toc import AnchorLink, TableOfContents

    def link(item):
        title, anchor, level, children = item
        made = AnchorLink(title, anchor, level)
        made.children = [link(c) for c in children]
        return made

    items = [link(i) for i in data]
    if items:
        items[0].active = True
    return TableOfContents(items)


class _Count(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        self.count += 1


class MarkdownCache:
    """Page.render, kept: :meth:`render` converts a page's Markdown as mkdocs does, or reads
    what an earlier build converted from the same input."""

    def __init__(self, config, files):
        self.store = _markdown_store()
        listing = sorted((f.src_uri, f.url, f.dest_uri) for f in files)
        self.context = diskcache.digest(
            json.dumps(listing),
            str(config["use_directory_urls"]),
            str(config["site_url"]),  # mkdocs.yml reads it from the environment
            Path(config.config_file_path).read_bytes(),  # the extensions and their options
        )
        self.files = files
        self.hits = self.misses = 0

    def render(self, page, config, files, render) -> None:
        """``render(config, files)`` (mkdocs' own), or its result read from the store. A page
        of the API reference (mkdocstrings' ``:::``) is read from the Python source: its key
        holds the library's source too (``book.resultcache``), and what its rendering registers
        (autorefs' anchors, the inventory's items, the handlers it used) is kept beside its
        HTML and registered again when it is read."""
        api = "\n::: " in page.markdown or page.markdown.startswith("::: ")
        checked = logging.getLogger("mkdocs").getEffectiveLevel() > logging.DEBUG
        parts = [self.context, str(checked), page.file.src_uri, page.markdown]
        if api:
            from book.resultcache import _library_digest

            parts.append(_library_digest())
        key = diskcache.digest(*parts)
        stored = self.store.get(key)
        if stored is not None:
            try:
                data = json.loads(stored)
                self._restore(page, data)
                _register(config, page, data.get("registered", []))
                self.hits += 1
                return None
            except (ValueError, KeyError, TypeError):
                pass  # an entry this code cannot read: rendered again
        self.misses += 1
        warnings = _Count()
        logger = logging.getLogger("mkdocs")
        logger.addHandler(warnings)
        try:
            with _recording(config, api) as registered:
                render(config, files)
        finally:
            logger.removeHandler(warnings)
        if warnings.count == 0:
            data = dict(self._data(page), registered=registered)
            self.store.put(key, json.dumps(data).encode("utf-8"))
        return None

    @staticmethod
    def _data(page) -> dict:
        links = page.links_to_anchors
        return {
            "content": page.content,
            "toc": toc_data(page.toc),
            "title": page._title_from_render,
            "anchors": sorted(page.present_anchor_ids or ()),
            "links": None
            if links is None
            else {f.src_uri: dict(anchors) for f, anchors in links.items()},
        }

    def _restore(self, page, data: dict) -> None:
        links = data["links"]
        if links is not None:
            resolved = {}
            for src, anchors in links.items():
                target = self.files.get_file_from_path(src)
                if target is None:
                    raise KeyError(src)
                resolved[target] = anchors
            links = resolved
        page.content = data["content"]
        page.toc = toc_from_data(data["toc"])
        page._title_from_render = data["title"]
        page.present_anchor_ids = set(data["anchors"])
        if links is not None:
            page.links_to_anchors = links


@contextlib.contextmanager
def _recording(config, api: bool):
    """The list of what mkdocstrings registers while a page of the API reference renders:
    ``["handler", name]``, ``["anchor", identifier, anchor, title, primary]`` (autorefs) and
    ``["inventory", name, domain, role, uri, priority, dispname]`` (objects.inv)."""
    made: list = []
    autorefs = config.plugins.get("autorefs")
    docs = config.plugins.get("mkdocstrings")
    if not api or autorefs is None or docs is None:
        yield made
        return
    handlers = docs.handlers
    anchor, item, handler = (
        autorefs.register_anchor,
        handlers.inventory.register,
        handlers.get_handler,
    )

    def register_anchor(page, identifier, anchor_id=None, *, title=None, primary=True):
        made.append(["anchor", identifier, anchor_id, title, primary])
        return anchor(page, identifier, anchor_id, title=title, primary=primary)

    def register(name, domain, role, uri, priority=1, dispname=None):
        made.append(["inventory", name, domain, role, uri, priority, dispname])
        return item(name, domain, role, uri, priority, dispname)

    def get_handler(name, handler_config=None):
        if ["handler", name] not in made:
            made.append(["handler", name])
        return handler(name, handler_config)

    autorefs.register_anchor = register_anchor
    handlers.inventory.register = register
    handlers.get_handler = get_handler
    try:
        yield made
    finally:
        del autorefs.register_anchor, handlers.inventory.register, handlers.get_handler


def _register(config, page, registered: list) -> None:
    """Register again what :func:`_recording` saw a page's rendering register."""
    if not registered:
        return
    autorefs, handlers = config.plugins["autorefs"], config.plugins["mkdocstrings"].handlers
    for what, *args in registered:
        if what == "handler":
            handlers.get_handler(*args)
        elif what == "anchor":
            identifier, anchor, title, primary = args
            autorefs.register_anchor(page, identifier, anchor, title=title, primary=primary)
        elif what == "inventory":
            handlers.inventory.register(*args)
        else:
            raise KeyError(what)


@functools.cache
def _markdown_store() -> diskcache.Store:
    version = diskcache.digest(
        *_versions(*MARKDOWN_LIBRARIES),
        diskcache.source_digest(HERE / "doctest_md.py", __file__),
    )
    return diskcache.Store("markdown", version[:32])


# -- search entries ------------------------------------------------------------------------------


def cache_search_entries(index) -> None:
    """Make Material's search index (``SearchPlugin.search_index``) read a page's entries from
    the store when an earlier build indexed the same page."""
    compute = index.add_entry_from_context
    store = _search_store()
    settings = json.dumps(
        {k: index.config.get(k) for k in ("lang", "separator", "pipeline", "fields")},
        default=repr,
        sort_keys=True,
    )

    def add_entry_from_context(page):
        key = diskcache.digest(
            settings,
            page.content or "",
            page.url,
            str(page.title),
            json.dumps(page.meta, default=repr, sort_keys=True),
            json.dumps(toc_data(page.toc)),
        )
        stored = store.get(key)
        if stored is not None:
            try:
                index.entries.extend(json.loads(stored))
                return
            except ValueError:
                pass
        before = len(index.entries)
        compute(page)
        store.put(key, json.dumps(index.entries[before:]).encode("utf-8"))

    index.add_entry_from_context = add_entry_from_context


@functools.cache
def _search_store() -> diskcache.Store:
    return diskcache.Store("search", diskcache.digest(*_versions("mkdocs-material"))[:32])


# -- compiled templates --------------------------------------------------------------------------


class TemplateCache(jinja2.BytecodeCache):
    """jinja2's bytecode cache on the sealed store: a template compiled by an earlier build
    (same source, same environment options, same Python and jinja2) is loaded, not compiled."""

    def __init__(self):
        self.store = diskcache.Store(
            "templates", diskcache.digest(sys.version, jinja2.__version__)[:32]
        )

    @staticmethod
    def _key(bucket) -> str:
        env = bucket.environment
        options = [
            env.block_start_string,
            env.block_end_string,
            env.variable_start_string,
            env.variable_end_string,
            env.comment_start_string,
            env.comment_end_string,
            env.line_statement_prefix,
            env.line_comment_prefix,
            env.trim_blocks,
            env.lstrip_blocks,
            env.newline_sequence,
            env.keep_trailing_newline,
            env.optimized,
            env.finalize is not None,
            getattr(env.autoescape, "__qualname__", env.autoescape),
            sorted(env.extensions),
            type(env).__qualname__,
        ]
        return diskcache.digest(repr(options), bucket.key, bucket.checksum)

    def load_bytecode(self, bucket) -> None:
        data = self.store.get(self._key(bucket))
        if data is not None:
            bucket.bytecode_from_string(data)

    def dump_bytecode(self, bucket) -> None:
        self.store.put(self._key(bucket), bucket.bytecode_to_string())


@functools.cache
def template_cache() -> TemplateCache:
    return TemplateCache()
