"""The whole book as one PDF, printed by headless Chromium from the built site.

The pages of the book (chapters, claims audit, practice problems with answers, flashcards) are
joined in nav order into one print page (``print.html`` in the site) that keeps the site's CSS,
adds a print stylesheet (navigation hidden, every collapsed answer opened) and starts with a
linked table of contents that gives the page each part starts on (the book is printed once,
where each part starts is read back from the PDF's anchors, and the front matter alone is
printed again with the numbers and put in place of the first pages). Math is already typeset
and figures are inline SVG, so Chromium prints them as the site shows them. The PDF gets page
numbers, running headers and a bookmark outline, and is written atomically (a temporary file
renamed into place).

>>> [p for p in book_pages(NAV_SAMPLE)]
[('Batch size', 'chapters/batching.md'), ('Claims audit', 'claims.md')]
"""

from __future__ import annotations

import html
import os
import re
import shutil
from pathlib import Path

import yaml

from units import ChalkboardError

ROOT = Path(__file__).resolve().parents[1]
MKDOCS_YML = ROOT / "mkdocs.yml"
PDF_NAME = "chalkboard.pdf"
PRINT_PAGE = "print.html"
# The nav sections that make the printed book; the rest (home, study, presets, API) are tools
# or reference that read better on the site.
INCLUDE = ("chapters/", "claims.md", "problems/", "cards/")
FLAGS = [  # how Chromium is launched here and in the browser tests (tests/book/browser.py)
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NAV_SAMPLE = [
    {"Home": "index.md"},
    {"Chapters": [{"Batch size": "chapters/batching.md"}]},
    {"Claims audit": "claims.md"},
    {"Flashcards": [{"Study": "study.md"}]},
]

PRINT_CSS = """
@page { size: A4; margin: 18mm 14mm 18mm 14mm; }
html, body { background: #fff !important; }
body { font-size: 11pt; }
.md-typeset { font-size: 10.5pt; }
.print-section { break-before: page; }
.print-toc ol { list-style: none; padding-left: 0; }
.print-toc li { margin: 0.2em 0; display: flex; align-items: baseline; }
.print-toc li a { flex: 0 1 auto; }
.print-toc li .toc-dots { flex: 1 1 auto; border-bottom: 1px dotted #999; margin: 0 0.4em; }
.print-toc li .toc-page { flex: 0 0 3em; text-align: right; font-variant-numeric: tabular-nums; }
.print-toc li.group { margin-top: 0.8em; font-weight: bold; }
.print-title { text-align: center; margin-top: 30vh; }
.headerlink, .md-header, .md-tabs, .md-sidebar, .md-footer, .md-source-file,
.md-content__button, .md-top, .md-search, button, input, .md-clipboard { display: none !important; }
details > summary::after { display: none !important; }
/* a box's icon: the print drops the title's indent, so the icon would cover its first letters */
.md-typeset .admonition-title::before,
.md-typeset details > summary::before { display: none !important; }
pre, table, figure, svg, .admonition, details { break-inside: avoid; }
h1, h2, h3 { break-after: avoid; }
a { color: inherit; }
"""
MARGIN = {"top": "18mm", "bottom": "18mm", "left": "14mm", "right": "14mm"}  # as in @page
HEAD_STYLE = "font-size: 8px; color: #555; font-family: sans-serif; vertical-align: middle;"


def _css_string(text: str) -> str:
    """``text`` inside a double-quoted CSS string."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("<", "\\3c ")


HEADER = (
    '<div style="font-size:8px;width:100%;padding:0 14mm;color:#555;'
    'font-family:sans-serif"><span class="title"></span></div>'
)
FOOTER = (
    '<div style="font-size:8px;width:100%;text-align:center;color:#555;font-family:sans-serif">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)  # !ENV and theme tags


def book_pages(nav=None) -> list[tuple[str, str]]:
    """(title, Markdown path) of every printed page, in nav order."""
    if nav is None:
        nav = yaml.load(MKDOCS_YML.read_text(encoding="utf-8"), Loader=_Loader)["nav"]
    found = []

    def walk(items, group):
        for item in items:
            for title, value in item.items():
                if isinstance(value, list):
                    walk(value, title)
                elif value.startswith(INCLUDE) and value != "study.md":
                    found.append((title, value))

    walk(nav, None)
    return found


def _html_path(md: str) -> str:
    """``chapters/x.md`` -> ``chapters/x/index.html`` (use_directory_urls)."""
    stem = md[: -len(".md")]
    if stem == "index" or stem.endswith("/index"):
        return stem + ".html"
    return stem + "/index.html"


def running_header(md: str, title: str) -> str:
    """The header on a printed page's pages: its title, after its group's when titles repeat.

    >>> running_header("problems/moe.md", "Mixture of experts on racks")
    'Practice problems · Mixture of experts on racks'
    """
    group = _group(md)
    return title if group in ("Chapters", "Claims audit") else f"{group} · {title}"


def _group(md: str) -> str:
    return {"chapters": "Chapters", "problems": "Practice problems", "cards": "Flashcards"}.get(
        md.split("/")[0], "Claims audit"
    )


# a contents number not yet known: printed in the same kind of box as the number (so the
# front matter, printed again with the numbers, has the same layout and tags)
UNKNOWN = "0"
ARTICLE = re.compile(r'<article class="md-content__inner md-typeset">(.*?)</article>', re.S)
STYLESHEET = re.compile(r'<link rel="stylesheet" href="([^"]+)"')


def print_page(site: Path, numbers: dict[int, int] | None = None) -> str:
    """The combined print page's HTML, built from the pages of the built ``site``; ``numbers``
    maps each printed page's index to the PDF page it starts on, for the table of contents
    (blank, in boxes of the same width, when not yet known)."""
    numbers = numbers or {}
    head = (site / "index.html").read_text(encoding="utf-8")
    css = "".join(
        f'<link rel="stylesheet" href="{html.escape(href)}">\n' for href in STYLESHEET.findall(head)
    )
    toc, sections, heads, group = [], [], [], None
    for i, (title, md) in enumerate(book_pages()):
        page = site / _html_path(md)
        if not page.is_file():
            raise ChalkboardError(f"{page} is missing: build the site before printing it")
        match = ARTICLE.search(page.read_text(encoding="utf-8"))
        if not match:
            raise ChalkboardError(f"{page} has no article to print")
        body, prefix = match.group(1), f"p{i}-"
        # ids are per page on the site: prefix them so anchors stay unique in one document
        # (and in the inline SVG figures, whose href="#…" and url(#…) point at their own defs)
        body = re.sub(r'(?<![\w-])id="([^"]+)"', rf'id="{prefix}\1"', body)
        body = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}\1"', body)
        body = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}\1)", body)
        body = re.sub(r"<details(?![^>]*\bopen\b)", "<details open", body)
        if _group(md) != group:
            group = _group(md)
            toc.append(f'<li class="group">{html.escape(group)}</li>')
        toc.append(
            f'<li><a href="#{prefix}page">{html.escape(title)}</a><span class="toc-dots"></span>'
            f'<span class="toc-page">{numbers.get(i, UNKNOWN)}</span></li>'
        )
        # the running header: each part prints on its own named pages, whose top right margin
        # box names it (Chromium's header template, the same on every page, gives the book's)
        running = running_header(md, title)
        heads.append(
            f'@page s{i} {{ @top-right {{ content: "{_css_string(running)}"; {HEAD_STYLE} }} }}\n'
            f"#{prefix}page {{ page: s{i}; }}\n"
        )
        sections.append(f'<section class="print-section" id="{prefix}page">{body}</section>')
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>Chalkboard</title>\n{css}<style>{PRINT_CSS}{''.join(heads)}</style></head>"
        '<body><div class="md-container"><main class="md-main"><div class="md-content">'
        '<article class="md-content__inner md-typeset">'
        '<h1 class="print-title">Chalkboard</h1><p style="text-align:center">The math of how '
        "large language models are trained and served, checked by a computer.</p>"
        '<nav class="print-toc print-section"><h2>Contents</h2><ol>'
        + "".join(toc)
        + "</ol></nav>"
        + "".join(sections)
        + "</article></div></main></div></body></html>"
    )


def chromium() -> str:
    """The system Chromium: ``CHALKBOARD_CHROMIUM``, else the first of the usual names."""
    found = os.environ.get("CHALKBOARD_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )
    if not found:
        raise ChalkboardError(
            "Chromium was not found: install Debian's 'chromium' or set CHALKBOARD_CHROMIUM"
        )
    return found


def write_pdf(site: Path, out: Path | None = None, previous: Path | None = None) -> Path:
    """Print the built ``site`` to ``out`` (default ``site/chalkboard.pdf``) atomically.
    ``previous``, an earlier PDF of the book, gives the contents' first guess of where each part
    starts: when an edit moved no page break, the front matter is not printed again."""
    site = Path(site).absolute()
    if not (site / "index.html").is_file():
        raise ChalkboardError(f"{site} holds no built site: build the site before printing it")
    out = Path(out).absolute() if out else site / PDF_NAME
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
        from pypdf import PdfReader  # reads the page numbers back for the contents
    except ImportError:
        raise ChalkboardError(
            "printing the PDF needs playwright and pypdf: pip install -e '.[dev]'"
        ) from None
    browser_path = chromium()
    page_file = site / PRINT_PAGE
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    front = tmp.with_name(tmp.name + ".front")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=browser_path, args=FLAGS)
            try:
                # Chromium cannot number a contents page itself: print the book once with the
                # previous print's numbers (or blanks of the same kind), read where each part
                # starts, and when a number changed print the front matter alone with the right
                # ones (boxes of fixed width: nothing moves) and put its pages in (splice_front)
                page = browser.new_page()
                page.set_default_timeout(PAGE_TIMEOUT_MS)
                # styles computed for print at load, not again when printing: 30% less CPU
                page.emulate_media(media="print")
                numbers = _guess(previous)
                page_file.write_text(print_page(site, numbers), encoding="utf-8")
                page.goto(page_file.as_uri(), wait_until="load")
                page.evaluate("document.fonts.ready.then(() => true)")
                _print(page, tmp)
                found = start_pages(tmp)
                if found != numbers:
                    page_file.write_text(print_page(site, found), encoding="utf-8")
                    page.evaluate(FILL_NUMBERS, [found[i] for i in range(len(found))])
                    page.add_style_tag(content=FRONT_ONLY)
                    book = PdfReader(tmp)
                    _print(page, front, total=len(book.pages), scale=_shrink(book, page))
                    splice_front(tmp, front, min(found.values()) - 1)
            finally:
                browser.close()
        os.replace(tmp, out)
        if out == site / PDF_NAME:
            _write_atomic(site / DIGEST_NAME, printed_digest(site))
            link_pdf(site)
    except PlaywrightError as err:
        raise ChalkboardError(f"printing the PDF failed: {str(err).splitlines()[0]}") from None
    finally:
        tmp.unlink(missing_ok=True)
        front.unlink(missing_ok=True)
    return out


DIGEST_NAME = "chalkboard.pdf.sha256"  # what the PDF was printed from (printed_digest)
PDF_MARK = re.compile(r'<span class="chalkboard-pdf">(.*?)</span>')


def printed_digest(site: Path) -> str:
    """A digest of everything the PDF is printed from: this module's source (the print page and
    its style), each printed page's HTML and the site's stylesheets. Two sites with the same
    digest print the same PDF."""
    import hashlib

    h = hashlib.sha256(Path(__file__).read_bytes())
    files = [site / _html_path(md) for _, md in book_pages()]
    files += sorted((site / "stylesheets").glob("*.css")) + sorted(site.glob("assets/**/*.css"))
    for f in files:
        h.update(f.relative_to(site).as_posix().encode() + b"\0")
        h.update(f.read_bytes() if f.is_file() else b"(missing)")
    return h.hexdigest()


def link_pdf(site: Path) -> None:
    """Make the home page's mention of the PDF a link: only a site holding its PDF links it
    (the template writes it as plain text, so a site built without ``--pdf`` has no dead link)."""
    index = site / "index.html"
    text = index.read_text(encoding="utf-8")
    linked = PDF_MARK.sub(lambda m: f'<a class="chalkboard-pdf" href="{PDF_NAME}">{m[1]}</a>', text)
    if linked != text:
        _write_atomic(index, linked)


def keep_pdf(previous: Path, site: Path) -> bool:
    """Carry the PDF of the ``previous`` build into the new ``site`` when it was printed from
    the same pages (same digest), and link it; a stale PDF is dropped, never shown as current.
    Returns whether it was kept."""
    old, digest = previous / PDF_NAME, previous / DIGEST_NAME
    try:
        same = digest.read_text(encoding="utf-8").strip() == printed_digest(site)
    except OSError:
        return False
    if not (same and old.is_file()):
        return False
    shutil.copy2(old, site / PDF_NAME)
    shutil.copy2(digest, site / DIGEST_NAME)
    link_pdf(site)
    return True


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# the print page holds the whole book: on a busy 2-core machine loading it takes minutes
PAGE_TIMEOUT_MS = 600_000
# the contents' page numbers written into the loaded print page, as print_page writes them
FILL_NUMBERS = """numbers => document.querySelectorAll('.print-toc .toc-page')
    .forEach((box, i) => { box.textContent = String(numbers[i]); })"""
# the front matter alone (title and contents), to print again with the right page numbers
FRONT_ONLY = ".print-section:not(.print-toc) { display: none !important; }"


def _guess(previous: Path | None) -> dict[int, int] | None:
    """Where each part starts in the ``previous`` PDF, or None (none, unreadable, or of a book
    with other parts)."""
    if previous is None or not Path(previous).is_file():
        return None
    try:
        return start_pages(Path(previous))
    except Exception:  # noqa: BLE001 - a guess only: any damage means no guess
        return None


def _print(page, path: Path, total: int | None = None, scale: float = 1) -> None:
    """Print the loaded ``page`` to ``path`` with header, footer, outline and tags; ``total``,
    when given, is the page count its footer gives (the book's, for its front matter alone)."""
    footer = (
        FOOTER if total is None else FOOTER.replace('<span class="totalPages"></span>', str(total))
    )
    page.pdf(
        path=str(path),
        format="A4",
        print_background=True,
        display_header_footer=True,
        header_template=HEADER,
        footer_template=footer,
        margin=MARGIN,
        outline=True,
        tagged=True,
        scale=scale,
    )


def _links(page) -> list[tuple[str, list[float]]]:
    """The internal links of a PDF page: (destination, rectangle in points)."""
    found = []
    for annot in page.get("/Annots") or []:
        annot = annot.get_object()
        if "/Dest" in annot:
            found.append((str(annot["/Dest"]).lstrip("/"), [float(x) for x in annot["/Rect"]]))
    return found


def _shrink(book, page) -> float:
    """How much Chromium shrank the printed ``book`` (a pypdf reader) to fit the paper: it
    scales the whole document down to its widest block, so the front matter printed alone must
    be scaled alike. Measured on the first page of the contents: the distance from its first
    link to its last in the PDF over that in the loaded ``page`` (a CSS px prints as 0.75 pt)."""
    for printed in book.pages:
        links = _links(printed)
        if links and links[0][0] == "p0-page":
            (first, (_, top, _, _)), (last, (_, bottom, _, _)) = links[0], links[-1]
            screen = page.evaluate(
                """([first, last]) => ['#' + first, '#' + last].map(id => document
                    .querySelector(`.print-toc a[href="${id}"]`).getBoundingClientRect().top)""",
                [first, last],
            )
            return (top - bottom) / (0.75 * (screen[1] - screen[0])) if last != first else 1
    raise ChalkboardError("the printed contents have no link to the first part")


def splice_front(book: Path, front: Path, count: int) -> None:
    """Put the first ``count`` pages of the ``front`` PDF (the front matter printed alone, with
    the contents' page numbers) in place of the ``book``'s first pages, in place. Only what they
    show changes (content and resources): the book's page objects keep their links, their place
    in the outline and the tags (the same elements, printed alike, so the same marked-content
    ids). Written as an incremental update: the book's bytes stay, the new pages follow."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import NameObject

    new = PdfReader(front)
    if len(new.pages) != count:
        raise ChalkboardError(
            f"the contents printed alone took {len(new.pages)} pages, not {count}: "
            "their page numbers moved the page breaks"
        )
    writer = PdfWriter(book, incremental=True)
    for n, (old, fresh) in enumerate(zip(writer.pages, new.pages, strict=False), start=1):
        # each link of the book's page must lie where its text is printed now (to a point)
        here, there = _links(old), _links(fresh)
        moved = [
            d
            for (d, r), (e, q) in zip(here, there, strict=False)
            for a, b in zip(r, q, strict=True)
            if d != e or abs(a - b) > 1
        ]
        if moved or len(here) != len(there):
            raise ChalkboardError(f"the contents printed alone do not match the book's page {n}")
        for key in ("/Contents", "/Resources"):
            old[NameObject(key)] = fresh.raw_get(key).clone(writer)
    tmp = book.with_name(book.name + ".splice")
    try:
        with tmp.open("wb") as f:
            writer.write(f)
        os.replace(tmp, book)
    finally:
        tmp.unlink(missing_ok=True)


def start_pages(pdf: Path) -> dict[int, int]:
    """The page (counting from 1, as the footer does) on which each printed page starts, read
    from the PDF's named destinations (``p3-page`` is the anchor of the fourth page)."""
    from pypdf import PdfReader

    reader = PdfReader(pdf)
    found = {}
    for name, dest in reader.named_destinations.items():
        match = re.fullmatch(r"/?p(\d+)-page", name)
        if match:
            found[int(match.group(1))] = reader.get_destination_page_number(dest) + 1
    expected = set(range(len(book_pages())))
    if set(found) != expected:
        raise ChalkboardError(
            f"the PDF lacks the start of printed pages {sorted(expected - set(found))}"
        )
    return found
