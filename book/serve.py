"""``chalkboard serve``: preview the site on 127.0.0.1, rebuilt when a source changes and reloaded
in the browser.

Two processes. This one stays light (no sympy, no mkdocs): it serves the last good site, watches
the sources and prints one line per rebuild, or one ``error:`` line when a rebuild fails (the last
good site stays served). A *builder* process (``python -m book.serve``) builds the whole site once
and keeps what it computed in memory: every page's context, mkdocs' configuration, navigation and
theme, and KaTeX's typeset formulas. A template edit then rebuilds only the pages whose template
uses the edited one: their Markdown from the kept contexts, their HTML alone. A preset edit (a TOML
file of presets) is read by the same builder. Every page maker (``book.site.makers``) was computed
under a recording of the preset fields it read (:mod:`units.reads`; a field read through a cache
counts, a kind listed counts as its list of ids): only the makers that read an edited field, or
listed a kind that gained or lost a preset, are computed again, each cached result that read one is
forgotten, and the HTML of each page whose Markdown changed is rebuilt; the notebooks of those
chapters, the flashcard exports, the calculators' data and the tutorial are made again when they
read an edited field. The pages open in a browser come first (as Hugo's fast render mode renders
the pages being viewed first): their makers are computed, and those pages (with the calculators'
data every page loads) written, before the rest, and the browsers showing them reload at once; the
other pages follow, and every page is then what a full build makes. The search index stays the full
build's until the next one. A change to anything else (Python, assets, ``mkdocs.yml``; an equation
is Python), or a preset edit that adds or removes a page, starts a fresh builder for a full build,
since modules cannot be reloaded safely; the old site is served until it succeeds. That builder
is a spare started ahead (once the previous full build ended or showed its early pages), which
waits with the third-party libraries a build uses imported (never the project's modules: they are
imported after the edit).
It builds the pages open in a browser first (their makers, the derivations' checks, their
Markdown and, with mkdocs, their HTML, the other pages' Markdown being the served site's: the
same navigation and theme, and the same HTML the full build then makes) with the calculators'
data when it changed; those are served over the old site (an overlay: :class:`State`) and the
browsers showing them reload at once. Then it builds the whole site, which is served when it
succeeded; a page shown ahead reloads again only if the full build made it otherwise. A build
that fails, or is stopped by a second edit, is served no more, its early pages with it.

Every HTML page is served with a small script that long-polls ``/__chalkboard__/build`` on the same
server, saying which page it shows, and reloads the page when the build changes (no external
network); a page rebuilt ahead of the rest has a build of its own, so it reloads once. Unknown URLs
and folders without an ``index.html`` get the site's own 404 page (never a listing); a request
whose ``Host`` is not 127.0.0.1 or localhost (a page of another site reaching it by DNS rebinding)
gets 421, a malformed path 400, and a connection that sends nothing is closed after IDLE_TIMEOUT
seconds. SIGTERM and SIGINT stop the builder and remove the temporary folder.

>>> inject(b"<html><body><p>hi</p></body></html>", "7").count(b"__chalkboard__/build")
1
"""

from __future__ import annotations

import contextlib
import datetime
import gc
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from book import parallel
from book.signals import terminate_cleanly

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TEMPLATES = HERE / "templates"
MKDOCS_YML = ROOT / "mkdocs.yml"
WATCHED = (ROOT / "units", ROOT / "derivations", HERE, MKDOCS_YML)
PRESETS_DATA = ROOT / "units" / "data"  # the built-in presets (units.presets.BUILTIN_FILES)
PAGES_INDEX = "pages.json"  # in a builder's folder: its pages' makers and URLs
CALCULATORS_DATA = "javascripts/calculators-data.js"  # every page loads it (book.site.render)
LIVE = "/__chalkboard__/build"
LIVE_WAIT = 25.0  # seconds a long poll is held before it answers "no change"
IDLE_TIMEOUT = 30.0  # seconds a connection may send nothing before it is closed
GONE_CHECK = 0.5  # seconds between looks at whether a long poll's browser went away
BACKLOG = 128  # connections the kernel holds before they are accepted (a burst of reloads)
HOSTS = ("127.0.0.1", "localhost")  # the Host headers answered (DNS rebinding gets 421)
SCRIPT = """<script>
(function () {
  if (window.__chalkboardLive) return;
  window.__chalkboardLive = true;
  var build = "%s";
  function poll() {
    var page = "&page=" + encodeURIComponent(location.pathname);
    fetch("%s?since=" + encodeURIComponent(build) + page, {cache: "no-store"})
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (id) { if (id !== build) location.reload(); else poll(); })
      .catch(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
</script>
"""
PLACEHOLDER = """<!doctype html><html><head><meta charset="utf-8"><title>Chalkboard</title></head>
<body><p>%s</p></body></html>
"""


def page_url(path: str) -> str:
    """The page a URL path shows, as the server and the builder name it: unquoted, its
    ``index.html`` left out.

    >>> page_url("/chapters/moe/index.html"), page_url("/chapters/moe/"), page_url("/")
    ('/chapters/moe/', '/chapters/moe/', '/')
    """
    import urllib.parse

    path = urllib.parse.unquote(path)
    return path.removesuffix("index.html") if path.endswith("/index.html") else path


def inject(html: bytes, build: str) -> bytes:
    """``html`` with the live-reload script before ``</body>`` (or at the end)."""
    script = (SCRIPT % (build, LIVE)).encode()
    at = html.rfind(b"</body>")
    return html + script if at < 0 else html[:at] + script + html[at:]


# -- the watcher --------------------------------------------------------------------------------


def _ignored(name: str) -> bool:
    """Editor and Python by-products: swap and backup files, vim's write test, bytecode."""
    return (
        name.startswith((".", "#"))
        or name.endswith(("~", ".swp", ".swx", ".pyc", ".tmp"))
        or name == "4913"
    )


def snapshot(paths) -> dict[Path, tuple[float, int]]:
    """Every watched file's modification time and size."""
    found: dict[Path, tuple[float, int]] = {}

    def walk(folder: str) -> None:
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                if _ignored(entry.name) or entry.name == "__pycache__":
                    continue
                if entry.is_dir(follow_symlinks=False):
                    walk(entry.path)
                elif entry.is_file():
                    with contextlib.suppress(OSError):
                        st = entry.stat()
                        found[Path(entry.path)] = (st.st_mtime, st.st_size)

    for path in paths:
        path = Path(path)
        if path.is_dir():
            walk(str(path))
        elif path.is_file():
            st = path.stat()
            found[path] = (st.st_mtime, st.st_size)
    return found


def changed(before: dict, after: dict) -> list[Path]:
    """Files added, removed or modified between two snapshots."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def template_names(paths) -> list[str] | None:
    """The templates among ``paths`` (names relative to book/templates), or None when any path
    is not a template: then only a full build is right.

    >>> template_names([TEMPLATES / "chapters" / "moe.md.j2"])
    ['chapters/moe.md.j2']
    >>> template_names([TEMPLATES / "chapters" / "moe.md.j2", ROOT / "units" / "x.py"]) is None
    True
    """
    names = []
    for path in paths:
        path = Path(path)
        if path.suffix != ".j2" or TEMPLATES not in path.parents:
            return None
        names.append(path.relative_to(TEMPLATES).as_posix())
    return names


def preset_files(paths, user_presets=()) -> bool:
    """Whether every path of ``paths`` is a presets file (the built-in ones or ``user_presets``),
    which the running builder reads again instead of starting a full build.

    >>> preset_files([ROOT / "units" / "data" / "hardware.toml"])
    True
    >>> preset_files([ROOT / "units" / "data" / "hardware.toml", ROOT / "units" / "x.py"])
    False
    """
    users = {Path(p).absolute() for p in user_presets}
    paths = [Path(p).absolute() for p in paths]
    return bool(paths) and all(
        p.suffix == ".toml" and (p.parent == PRESETS_DATA or p in users) for p in paths
    )


def _said(paths) -> str:
    names = [_relative(p) for p in paths]
    return names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more"


def _relative(path: Path) -> str:
    try:
        return Path(path).relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def _listed(pages: list[str]) -> str:
    return ", ".join(pages[:3]) + (f" and {len(pages) - 3} more" if pages[3:] else "")


def _now() -> str:
    return datetime.datetime.now().strftime("%H:%M:%S")


# -- the builder, seen from here ----------------------------------------------------------------


# A builder process starts by importing the third-party libraries a build uses, then reads its
# options (one JSON line) and runs ``python -m book.serve`` with them. A *spare* builder is started
# ahead of the next edit and waits with them imported, so that an edit's full build does not
# spend its first second importing them; the project's own modules are imported only once the
# options come, after the edit, as it left them.
PRELOADED = (
    "numpy", "sympy", "pint", "jinja2", "nbformat", "matplotlib", "matplotlib.pyplot",
    "markdown", "pymdownx.arithmatex", "pymdownx.superfences", "pymdownx.details",
    "mkdocs.commands.build", "mkdocs.config", "material.plugins.search.plugin",
    "mkdocstrings", "mkdocstrings_handlers.python", "mkdocs_autorefs",
)  # fmt: skip
BOOT = """
import contextlib, importlib, json, runpy, sys
for name in %r:
    with contextlib.suppress(Exception):
        importlib.import_module(name)
        if name == "matplotlib":
            sys.modules[name].use("Agg")  # as book.figures does, before pyplot
line = sys.stdin.readline()
if line:
    sys.argv = ["book.serve", *json.loads(line)]
    runpy.run_module("book.serve", run_name="__main__", alter_sys=True)
"""


class Builder:
    """A builder process: a full build into ``folder`` on start, then page rebuilds on request.
    Each request and the first build answer one JSON line. With ``options`` None it is a spare:
    it imports the libraries a build uses and waits for :meth:`go`."""

    def __init__(self, folder: Path, options: list[str] | None):
        self.folder = folder
        self.answered: threading.Event | None = None  # set on each answer (Preview sets it)
        folder.mkdir(parents=True)
        self.started = time.monotonic()
        self.replies: queue.Queue = queue.Queue()
        self.dead: dict = {}
        self.log = open(folder / "builder.log", "w", encoding="utf-8")  # noqa: SIM115
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, PYTHONPATH=path)  # this checkout's modules, wherever it runs
        self.proc = subprocess.Popen(
            [sys.executable, "-c", BOOT % (PRELOADED,)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd=ROOT,
            env=env,
            text=True,
            encoding="utf-8",
        )
        threading.Thread(target=self._read, daemon=True).start()
        if options is not None:
            self.go(options)

    def go(self, options: list[str]) -> None:
        """Start the full build (of a spare: now)."""
        self.started = time.monotonic()
        self._send(["--into", str(self.folder), *options])

    def _send(self, line) -> None:
        try:
            self.proc.stdin.write(json.dumps(line) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # it died: reply() says so

    def _read(self) -> None:
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.replies.put(json.loads(line))
                if self.answered is not None:
                    self.answered.set()
        self.replies.put(None)  # the builder ended
        if self.answered is not None:
            self.answered.set()

    def reply(self, timeout: float | None) -> dict:
        """The next answer; {} while there is none yet; an error when the builder died."""
        if self.dead:
            return self.dead
        try:
            got = self.replies.get(timeout=timeout) if timeout else self.replies.get_nowait()
        except queue.Empty:
            return {}
        if got is None:
            self.proc.wait()
            last = self._last_logged()
            said = f"the builder stopped (exit {self.proc.returncode}){': ' + last if last else ''}"
            self.dead = {"ok": False, "error": said}
            return self.dead
        return got

    def ask(self, request: dict, timeout: float = 600.0, early=None) -> dict:
        """The builder's answer to ``request``; ``early(reply)`` is called with each answer that
        comes before it (``"early": true``: the pages open in a browser, rebuilt first)."""
        self._send(request)
        while True:
            got = self.reply(timeout) or {"ok": False, "error": "the builder did not answer"}
            if not got.get("early"):
                return got
            if early is not None:
                early(got)

    def _last_logged(self) -> str:
        with contextlib.suppress(OSError):
            lines = (self.folder / "builder.log").read_text(encoding="utf-8").splitlines()
            return next((line.strip() for line in reversed(lines) if line.strip()), "")
        return ""

    @property
    def site(self) -> Path:
        return self.folder / "site"

    def stop(self) -> None:
        """End the process (SIGTERM, then SIGKILL) and remove its folder."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.log):  # its stdout ends with it (the reader's)
            with contextlib.suppress(OSError):
                stream.close()
        shutil.rmtree(self.folder, ignore_errors=True)


# -- the server ---------------------------------------------------------------------------------


class State:
    """What the request handlers read: the site being served and its build id, and the pages
    the browsers show (each page's reload script long-polls with its path). A page rebuilt
    ahead of the rest (:meth:`publish` with ``pages``) gets a build id of its own, so that only
    the browsers showing it reload."""

    RECENT = 5.0  # seconds a page whose last long poll ended still counts as shown

    def __init__(self):
        self.site: Path | None = None
        self.build = f"{time.time_ns():x}"
        self.builds: dict[str, str] = {}  # page -> its own build id, newer than self.build
        self.message = "Building the site… this page reloads when it is ready."
        self.changed = threading.Condition()
        self.closing = False
        self.polls: dict[str, int] = {}  # page -> long polls held now
        self.polled: dict[str, float] = {}  # page -> when its last long poll ended
        self.overlay: Path | None = None  # a full build's pages shown ahead of it, served
        self.overlaid: set[str] = set()  # over the site's at these URL paths (page_url's)

    def publish(
        self, site: Path | None = None, message: str | None = None, pages=None, keep=(),
        overlay: tuple[Path, list[str]] | None = None,
    ) -> None:  # fmt: skip
        """A new build: of the whole site, or (``pages``) of those pages alone. A new build of
        the site leaves the pages ``keep`` as they are (rebuilt before it, then unchanged).
        ``overlay`` (a folder and the URL paths it serves: pages and the scripts they load) is
        what a full build under way made ahead of the rest, served over the site until the
        site changes; pages rebuilt in the site meanwhile (``pages`` without ``overlay``) are
        the site's again."""
        with self.changed:
            if site is not None:
                self.site = site
                self.overlay, self.overlaid = None, set()
            if message is not None:
                self.message = message
            build = f"{time.time_ns():x}"
            if pages is not None:
                if overlay is not None:
                    self.overlay, self.overlaid = overlay[0], set(map(page_url, overlay[1]))
                else:
                    self.overlaid -= set(map(page_url, pages))
                self.builds.update((page_url(p), build) for p in pages)
            else:
                kept = {p: self.builds[p] for p in map(page_url, keep) if p in self.builds}
                self.build, self.builds = build, kept
            self.changed.notify_all()

    def drop_overlay(self) -> None:
        """Serve the site alone again (the build that made the overlay was stopped or failed);
        no browser reloads for it."""
        with self.changed:
            self.overlay, self.overlaid = None, set()

    def folder(self, path: str) -> Path | None:
        """The folder the URL path ``path`` is served from: the overlay's when it holds it."""
        with self.changed:
            if self.overlay is not None and page_url(path) in self.overlaid:
                return self.overlay
            return self.site

    def build_of(self, page: str = "") -> str:
        """The build id of the page at the URL path ``page`` (the site's when none is given)."""
        return self.builds.get(page_url(page), self.build) if page else self.build

    def wait(self, since: str, timeout: float, page: str = "", gone=None) -> str:
        """The build of ``page`` once it is not ``since`` (or after ``timeout`` seconds, or as
        soon as ``gone()`` says the browser went away: a tab closed no longer counts as shown)."""
        page = page_url(page)
        deadline = time.monotonic() + timeout
        left = False
        with self.changed:
            if page:
                self.polls[page] = self.polls.get(page, 0) + 1
            try:
                while not self.changed.wait_for(
                    lambda: self.build_of(page) != since or self.closing,
                    min(GONE_CHECK, deadline - time.monotonic()) if gone else timeout,
                ):
                    left = gone is not None and gone()
                    if left or time.monotonic() >= deadline:
                        break
                return self.build_of(page)
            finally:
                if page:
                    self.polls[page] -= 1
                    if not self.polls[page]:
                        del self.polls[page]
                    if left or (gone is not None and gone()):  # closed: no longer shown
                        self.polled.pop(page, None)
                    else:  # it polls again soon (after a reload too): still shown
                        self.polled[page] = time.monotonic()

    def shown(self) -> list[str]:
        """The pages open in a browser: a long poll held now, or one that ended moments ago (a
        page reloading)."""
        with self.changed:
            recent = time.monotonic() - self.RECENT
            self.polled = {p: t for p, t in self.polled.items() if t > recent}
            return sorted(set(self.polls) | set(self.polled))

    def close(self) -> None:
        with self.changed:
            self.closing = True
            self.changed.notify_all()


def make_handler(state: State):
    import html
    import http.server
    import urllib.parse

    class Handler(http.server.SimpleHTTPRequestHandler):
        timeout = IDLE_TIMEOUT  # read from the module on each connection (tests shorten it)

        def __init__(self, *args, **kwargs):
            self.timeout = IDLE_TIMEOUT
            super().__init__(*args, directory=str(state.site or ROOT / "-"), **kwargs)

        def log_message(self, *args):  # one line per rebuild, not one per request
            pass

        def end_headers(self):
            self.send_header("Cache-Control", "no-store")
            super().end_headers()

        def do_GET(self):
            self._checked(body=True)

        def do_HEAD(self):
            self._checked(body=False)

        def _checked(self, body: bool) -> None:
            host = self.headers.get("Host")
            if host is None:
                return self.send_error(400, "No Host header")
            name, _, port = host.strip().lower().rpartition(":")
            if not name or not port.isdigit():
                name = host.strip().lower()
            if name not in HOSTS:
                return self.send_error(421, "This server answers only 127.0.0.1 and localhost")
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
            if "\0" in path:
                return self.send_error(400, "A null byte in the path")
            try:
                self._answer(body)
            except ValueError:  # a path the file system cannot take
                self.send_error(400, "Bad path")

        def _gone(self) -> bool:
            """Whether the browser closed this connection (a tab closed, a page left)."""
            import select
            import socket

            try:
                readable, _, _ = select.select([self.connection], [], [], 0)
                return bool(readable) and not self.connection.recv(1, socket.MSG_PEEK)
            except OSError:
                return True

        def list_directory(self, path):  # a folder without index.html: the 404 page
            self.send_error(404)

        def _answer(self, body: bool) -> None:
            url = urllib.parse.urlsplit(self.path)
            if url.path == LIVE:
                query = urllib.parse.parse_qs(url.query)
                since, page = query.get("since", [""])[0], query.get("page", [""])[0]
                build = state.wait(since, LIVE_WAIT, page, self._gone).encode()
                return self._send(200, build, "text/plain; charset=utf-8", body)
            if state.site is None:
                page = (PLACEHOLDER % html.escape(state.message, quote=False)).encode()
                return self._send(503, inject(page, state.build), "text/html", body)
            self.directory = str(state.folder(url.path))  # a page shown ahead of its build
            path = Path(self.translate_path(self.path))
            if path.is_dir():
                if not (path / "index.html").is_file():
                    return self.send_error(404)
                if url.path.endswith("/"):
                    path = path / "index.html"
            if path.suffix == ".html" and path.is_file():
                page = inject(path.read_bytes(), state.build_of(url.path))
                return self._send(200, page, "text/html; charset=utf-8", body)
            if body:
                return super().do_GET()
            return super().do_HEAD()

        def send_error(self, code, message=None, explain=None):
            page = state.site / "404.html" if state.site else None
            if code != 404 or page is None or not page.is_file():
                return super().send_error(code, message, explain)
            self._send(404, inject(page.read_bytes(), state.build), "text/html; charset=utf-8")

        def _send(self, code: int, data: bytes, kind: str, body: bool = True) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body and self.command != "HEAD":
                self.wfile.write(data)

    return Handler


# -- serve ----------------------------------------------------------------------------------------


def make_server(port: int, handler):
    """A threading HTTP server on 127.0.0.1:``port`` that holds a burst of BACKLOG connections
    and says nothing when a browser goes away mid-answer (a reload or a closed tab ends a held
    long poll) or a connection times out: socketserver would print a traceback on stderr, where
    the preview's errors are one line each."""
    import http.server

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = BACKLOG

        def handle_error(self, request, client_address):
            if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):  # gone, or idle
                return
            super().handle_error(request, client_address)

    return Server(("127.0.0.1", port), handler)


def builder_options(extra_presets=(), extra=()) -> list[str]:
    """The builder's options: it runs in the project folder, so every path is absolute."""
    options = []
    for path in extra_presets:
        options += ["--presets", str(Path(path).expanduser().absolute())]
    for path in extra:
        options += ["--extra", str(Path(path).expanduser().absolute())]
    return options


def _absolute_env_presets() -> None:
    """CHALKBOARD_PRESETS with absolute paths, for the builder that runs elsewhere."""
    value = os.environ.get("CHALKBOARD_PRESETS")
    if value:
        os.environ["CHALKBOARD_PRESETS"] = os.pathsep.join(
            str(Path(p).expanduser().absolute()) if p.strip() else p
            for p in value.split(os.pathsep)
        )


@contextlib.contextmanager
def _signals_ignored():
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(port: int = 8000, extra_presets=(), out=None, err=None, poll: float = 0.1, extra=()):
    """Serve the site on 127.0.0.1:``port`` until SIGINT or SIGTERM; see the module's text."""
    from units import ChalkboardError

    state = State()
    try:
        server = make_server(port, make_handler(state))
    except OSError as e:
        raise ChalkboardError(f"cannot serve on 127.0.0.1:{port}: {e.strerror}") from None
    _absolute_env_presets()
    watched = [*WATCHED, *(Path(p).expanduser().absolute() for p in (*extra_presets, *extra))]
    watched += [Path(p) for p in os.environ.get("CHALKBOARD_PRESETS", "").split(os.pathsep) if p]
    options = builder_options(extra_presets, extra)
    user_presets = [Path(p).expanduser().absolute() for p in extra_presets]
    user_presets += [
        Path(p) for p in os.environ.get("CHALKBOARD_PRESETS", "").split(os.pathsep) if p
    ]
    preview: Preview | None = None
    serving = False
    try:
        with terminate_cleanly():
            preview = Preview(state, options, out or sys.stdout, err, user_presets)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            serving = True
            preview.say(f"serving http://127.0.0.1:{port}/ (building the site; Ctrl-C stops)")
            preview.full("first build")
            seen = snapshot(watched)
            while True:
                preview.answered.wait(poll)  # a builder's answer is taken at once
                preview.answered.clear()
                now = snapshot(watched)
                if now != seen:
                    time.sleep(0.05)  # let an editor finish writing, then take what it wrote
                    now = snapshot(watched)
                    preview.edited(changed(seen, now))
                    seen = now
                preview.check()
    except KeyboardInterrupt:
        if preview is not None:
            preview.say(f"{_now()} stopped")
    finally:
        with _signals_ignored():  # a second Ctrl-C or SIGTERM must not cut the cleanup short
            state.close()
            if serving:
                server.shutdown()
            server.server_close()
            if preview is not None:
                preview.close()


class Preview:
    """The builders behind the served site: ``current`` built it, ``pending`` is a full build
    under way; edits go to one or the other."""

    def __init__(self, state: State, options: list[str], out, err, user_presets=()):
        self.state, self.options, self.out, self.err = state, options, out, err or sys.stderr
        self.user_presets = list(user_presets)
        self.work = Path(tempfile.mkdtemp(prefix="chalkboard-serve-"))
        self.builds = 0
        self.current: Builder | None = None
        self.pending: Builder | None = None
        self.spare: Builder | None = None  # the next full build's, waiting with its imports
        self.answered = threading.Event()  # set when a builder answers
        self.reason = ""
        self.edited_meanwhile: set[Path] = set()  # templates edited while ``pending`` builds
        self.early: dict = {}  # what ``pending`` showed ahead of its full build (its reply)

    def say(self, line: str, error: bool = False) -> None:
        with contextlib.suppress(OSError, ValueError):
            stream = self.err if error else self.out
            stream.write(line + "\n")
            stream.flush()

    def full(self, reason: str) -> None:
        """Start a full build in a fresh builder (replacing one under way, whose pages shown
        ahead of it are served no more). It builds the pages open in a browser first, from the
        current site's Markdown and navigation (``--previous``), and says so (:meth:`check`)."""
        if self.pending is not None:
            self.state.drop_overlay()
            self.pending.stop()
        self.edited_meanwhile.clear()
        self.early = {}
        self.reason = reason
        options = list(self.options)
        if self.current is not None and not self.current.dead:
            options += ["--previous", str(self.current.folder)]
            for url in self.state.shown():
                options += ["--first", url]
        spare, self.spare = self.spare, None
        if spare is not None and spare.proc.poll() is None:
            spare.go(options)
            self.pending = spare
        else:
            if spare is not None:
                spare.stop()
            self.pending = Builder(self._folder(), options)
            self.pending.answered = self.answered

    def _folder(self) -> Path:
        self.builds += 1
        return self.work / f"build-{self.builds}"

    def _start_spare(self) -> None:
        """A builder for the next full build, started ahead of it: once a full build ended or
        showed its early pages (not before: it would compete with them)."""
        if self.spare is None:
            self.spare = Builder(self._folder(), None)
            self.spare.answered = self.answered

    def edited(self, edits: list[Path]) -> None:
        names = template_names(edits)
        usable = self.current is not None and not self.current.dead
        if usable and self.pending is None and preset_files(edits, self.user_presets):
            return self.pages(None, edits)
        if names is None or not usable:
            return self.full(f"{_said(edits)} changed")
        if self.pending is not None:
            self.edited_meanwhile.update(edits)
        self.pages(names, edits)

    def pages(self, names: list[str] | None, edits) -> None:
        """Rebuild the pages whose template uses one of ``names`` (None: the presets changed:
        every page whose text changed, the pages open in a browser first, reloaded and said in a
        line of their own as soon as they are written); one line says how it went."""
        start = time.monotonic()
        early: list[str] = []

        def shown(got: dict) -> None:  # the pages open in a browser, rebuilt first: reload them
            early.extend(got["pages"])
            self.state.publish(pages=got["pages"])
            self.say(
                f"{_now()} showed {_listed(got['pages'])} first in "
                f"{time.monotonic() - start:.2f} s ({_said(edits)} changed; the rest follows)"
            )

        if names is not None:
            request = {"templates": names}
        else:  # a preset edit: the pages the browsers show first
            request = {"presets": True, "first": self.state.shown()}
        got = self.current.ask(request, early=shown)
        seconds = time.monotonic() - start
        if got.get("full"):  # the edit adds or removes a page: only a full build is right
            return self.full(f"{_said(edits)} changed")
        if not got.get("ok"):
            self.say(
                f"error: {_now()} {_said(edits)} changed: {got.get('error')}; "
                "still serving the last good site",
                error=True,
            )
            return
        rebuilt = got["pages"]
        if rebuilt or got.get("files"):
            self._reload(rebuilt, early, got.get("files", ()), got.get("files_late", ()))
        what = _listed(rebuilt)
        computed = ""
        if "computed" in got:  # a preset edit: the page makers that read an edited preset
            names = got["computed"]
            computed = f"; computed {', '.join(names) or 'nothing'} again"
        self.say(
            f"{_now()} rebuilt {what or 'no page'} in {seconds:.2f} s "
            f"({_said(edits)} changed{computed})"
        )

    def _reload(self, rebuilt, early, files, late) -> None:
        """Reload the browsers whose page changed: the pages ``rebuilt`` but not ``early``
        (reloaded when they were written), unless a script or style every page loads changed
        (the calculators' data), in ``files``: then every page, except the ones rebuilt early
        unless it changed after them (``late``)."""
        scripts = [f for f in files if f.endswith((".js", ".css"))]
        if not scripts:
            pages = [page for page in rebuilt if page not in early]
            if pages:
                self.state.publish(pages=pages)
        else:
            late_scripts = [f for f in late if f.endswith((".js", ".css"))]
            self.state.publish(keep=() if late_scripts else early)

    def check(self) -> None:
        """Take the pending full build's answer, if it came: serve its site, or say why not."""
        if self.pending is None:
            return
        got = self.pending.reply(None)
        if not got:
            return
        seconds = time.monotonic() - self.pending.started
        if got.get("early"):  # the pages open in a browser, built ahead of the rest
            if got.get("pages"):
                self.early = got
                served = [*got["pages"], *("/" + name for name in got.get("files", ()))]
                self.state.publish(pages=got["pages"], overlay=(Path(got["overlay"]), served))
                self.say(
                    f"{_now()} showed {_listed(got['pages'])} first in {seconds:.2f} s "
                    f"({self.reason}; the rest follows)"
                )
            self._start_spare()  # for an edit during the rest of this build, or after it
            return
        if not got.get("ok"):
            self.pending.stop()
            self.pending = None
            if self.early:  # its pages shown ahead: the last good site's again
                self.state.drop_overlay()
                self.state.publish(pages=self.early["pages"])
                self.early = {}
            last = "; still serving the last good site" if self.current else ""
            self.say(f"error: {_now()} build failed ({self.reason}): {got['error']}{last}", True)
            if self.current is None:
                self.state.publish(message=f"The build failed: {got['error']}")
            self._start_spare()
            return
        old, self.current, self.pending = self.current, self.pending, None
        keep = self._shown_as_built(old, self.current)
        self.state.publish(site=self.current.site, keep=keep)
        if old is not None:
            old.stop()
        self.say(f"{_now()} built the site in {seconds:.1f} s ({self.reason})")
        if self.edited_meanwhile:  # it may have read these templates before they changed
            edits = sorted(self.edited_meanwhile)
            self.edited_meanwhile.clear()
            self.pages(template_names(edits), edits)
        self._start_spare()

    def _shown_as_built(self, old: Builder | None, new: Builder) -> list[str]:
        """The pages shown ahead of ``new``'s full build that need no reload: the same HTML as
        its site's, and the same calculators' data (which every page loads) as it was shown
        with (the overlay's, else ``old``'s site's)."""
        early, self.early = self.early, {}
        if not early:
            return []
        overlay = Path(early["overlay"])
        shown_with = (
            overlay / CALCULATORS_DATA if CALCULATORS_DATA in early.get("files", ()) else None
        )
        if shown_with is None and old is not None:
            shown_with = old.site / CALCULATORS_DATA
        if shown_with is None or not _same(shown_with, new.site / CALCULATORS_DATA):
            return []
        return [
            url
            for url in early["pages"]
            if _same(overlay / _html_of(url), new.site / _html_of(url))
        ]

    def close(self) -> None:
        for builder in (self.spare, self.pending, self.current):
            if builder is not None:
                builder.stop()
        shutil.rmtree(self.work, ignore_errors=True)


# -- the builder process --------------------------------------------------------------------------


class Pages:
    """A built site and what built it, kept to rebuild single pages."""

    def __init__(self, into: Path, extra_presets=(), previous: Path | None = None, first=(),
                 shown=None):  # fmt: skip
        """Build the whole site into ``into``. With ``previous`` (the folder of the builder
        whose site is served) and ``first`` (the URLs open in a browser), those pages are built
        first and ``shown(urls, files, timings)`` is called (:meth:`_early`)."""
        from book import site
        from units import reads
        from units.presets import load

        started = time.monotonic()
        self.docs, self.site = into / "docs", into / "site"
        self.extra_presets = tuple(extra_presets)
        self.presets = load(self.extra_presets)
        # every page's template and context, kept; and by maker (book.site.makers) its pages
        # and the presets it read (units.reads), so a preset edit computes only what read it
        self.table: dict[str, tuple[str, dict]] = {}
        self.made: dict[str, tuple[tuple[str, ...], frozenset]] = {}
        makers = site.makers(self.presets)
        early = {}
        if previous and first:
            with parallel.wanted():  # a reader waits on these: a second core where it helps
                early = self._early(makers, into, previous, first, shown, started)
        for name, make in makers.items():
            if name in early:
                part, got = early[name]
            else:
                with reads.recording() as got:
                    part = make()
            self.made[name] = (tuple(part), frozenset(got))
            self.table.update(part)
        site.render(self.docs, self.presets, table=self.table)
        # the files made from the presets besides the pages, and what each read, made again
        # into a scratch folder (the tutorial is read back from the store)
        self.extras_read = {}
        scratch = into / "extras"
        for name, make in _extras(self.presets).items():
            with reads.recording() as got:
                make(scratch)
            self.extras_read[name] = frozenset(got)
        shutil.rmtree(scratch, ignore_errors=True)
        self.mk: dict = {}
        site._mkdocs_build(self.docs, self.site, keep=self.mk)
        # Indexing a page for search costs more than building it, and a page rebuild does not
        # write the index (the full build's stays): page rebuilds skip the search plugin.
        events = self.mk["config"].plugins.events["page_context"]
        events[:] = [e for e in events if not _search_plugin(getattr(e, "__self__", None))]
        self.env = site.environment()  # kept: jinja2 recompiles only templates that changed
        self.uses: dict[str, tuple[float, set[str]]] = {}  # template -> (mtime, names it uses)
        self._by_url: dict[str, str] | None = None  # a page's URL -> its Markdown's name
        self.timings: dict[str, float] = {}  # a preset edit's makers computed again: seconds
        self.computed: list[str] = []  # and their names, with the other files' made again
        self.copied: list[str] = []  # the files besides the pages it copied into the site
        self.copied_late: list[str] = []  # those copied after the open pages were rebuilt
        index = {"makers": {name: outs for name, (outs, _) in self.made.items()}}
        index["urls"] = {url: name for url, name in self._urls().items() if name in self.table}
        (into / PAGES_INDEX).write_text(json.dumps(index), encoding="utf-8")

    def _early(self, makers, into: Path, previous: Path, first, shown, started: float) -> dict:
        """Build the pages at the URLs ``first`` ahead of the rest, as Hugo's fast render mode
        does, and call ``shown(urls, files, timings)`` with those whose HTML differs from the
        served site's (``previous``: the served builder's folder), all of them when the
        calculators' data changed (every page loads it; then ``files`` names it), and the
        seconds each step took. Their makers are computed (and kept for the whole build), the
        derivations checked, their Markdown rendered and their HTML built into ``into/early``
        by mkdocs with this build's configuration and theme, the other pages' Markdown being
        the served site's (``previous/docs``): the same navigation and links, and the same HTML
        a full build makes. A failure to compute the pages is the build's (it would fail the
        same way); mkdocs' failing on them is only logged (the full build says what it makes
        of the page). Returns the makers computed: name -> (pages, presets read)."""
        import traceback

        import derivations
        from book import site
        from book.calculators import calculators_js
        from units import reads

        try:
            index = json.loads((previous / PAGES_INDEX).read_text(encoding="utf-8"))
            urls, by_maker = dict(index["urls"]), dict(index["makers"])
        except (OSError, ValueError, KeyError, TypeError):
            return {}
        wanted = {urls[url] for url in map(page_url, first) if url in urls}
        timings, last = {}, [started]

        def took(step: str) -> None:
            now = time.monotonic()
            timings[step], last[0] = now - last[0], now

        took("presets")

        computed = {}
        for name, outs in by_maker.items():
            if name in makers and wanted & set(outs):
                with reads.recording() as got:
                    part = makers[name]()
                computed[name] = (part, frozenset(got))
        if not computed:
            return {}
        took("the pages' makers")
        for eq in derivations.equations():
            eq.check()  # a wrong derivation step fails the build before a page shows it
        took("derivation checks")
        env = site.environment()
        texts = {
            out_name: site.page_markdown(env, *part[out_name], out_name)
            for part, _ in computed.values()
            for out_name in sorted(wanted & set(part))
        }
        took("their Markdown")
        data = calculators_js(self.presets)
        took("the calculators' data")
        early = into / "early"
        try:
            built = _early_pages(previous / "docs", early, texts)
        except Exception:  # noqa: BLE001 - the full build reports its own failure
            traceback.print_exc()  # the builder's log
            return computed
        took("their HTML (mkdocs)")
        files = []
        if data != _text(previous / "site" / CALCULATORS_DATA):
            site._write(early / CALCULATORS_DATA, data)
            files.append(CALCULATORS_DATA)
        pages = [
            url
            for url, dest in built.values()
            if files or not _same(early / dest, previous / "site" / dest)
        ]
        if shown is not None:
            shown(pages, files, timings)
        return computed

    def _urls(self) -> dict[str, str]:
        """Every page's URL path (``/chapters/moe/``) -> its Markdown (``chapters/moe.md``)."""
        if self._by_url is None:
            pages = self.mk["files"].documentation_pages()
            self._by_url = {page_url("/" + f.url): f.src_uri for f in pages}
        return self._by_url

    def _used(self, env, name: str) -> set[str]:
        """The templates ``name`` imports, includes or extends, transitively (itself too)."""
        import jinja2.meta

        seen, todo = set(), [name]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            path = TEMPLATES / current
            mtime = path.stat().st_mtime if path.is_file() else -1.0
            if self.uses.get(current, (None,))[0] != mtime:
                source = env.loader.get_source(env, current)[0]
                refs = set(jinja2.meta.find_referenced_templates(env.parse(source, current)))
                self.uses[current] = (mtime, refs)
            refs = self.uses[current][1]
            if None in refs:  # a computed name: it may use any template
                return {None}
            todo += refs
        return seen

    def rebuild(self, names: list[str]) -> list[str]:
        """Rebuild the pages whose template uses one of ``names``; returns their URLs."""
        import jinja2

        from book import site
        from units import ChalkboardError

        env = self.env
        touched = []
        for out_name, (template, ctx) in self.table.items():
            try:
                uses = self._used(env, template)
            except jinja2.TemplateSyntaxError as e:
                raise ChalkboardError(f"template {e.name} line {e.lineno}: {e}") from None
            except jinja2.TemplateNotFound as e:
                raise ChalkboardError(f"template {template}: {e.name} not found") from None
            if None in uses or uses & set(names):
                text = site.page_markdown(env, template, ctx, out_name)
                path = self.docs / out_name
                if path.read_text(encoding="utf-8") != text:
                    touched.append((out_name, text))
        return [self._build_page(out_name, text) for out_name, text in touched]

    def presets_edited(self, first=(), shown=None) -> list[str] | None:
        """Read the presets again and compute the pages that read an edited preset (every cached
        result that read one is forgotten, :mod:`units.reads`); rebuild the HTML of each page
        whose Markdown changed, and copy every other changed file into the site (the calculators'
        data and the flashcard exports, made again; the notebooks of the chapters computed
        again). The pages at the URLs ``first`` (the ones open in a browser) come first, as
        Hugo's fast render mode does: their makers are computed and those pages rebuilt before
        anything else, and ``shown(urls)`` is called with the ones rebuilt as soon as they are
        written; the rest follows. Returns the rebuilt pages' URLs (``first``'s among them), or
        None when a page was added or removed (only a full build is right then)."""
        from units import reads
        from units.presets import _load, load

        _load.cache_clear()  # the files changed under the same names
        try:
            with parallel.wanted():  # a reader waits: a second core where it helps
                return self._presets_edited(load(self.extra_presets), first, shown)
        except BaseException:  # what was computed from the edit may be half made: none kept
            reads.forget_all()
            self.made = {name: (outs, reads.UNKNOWN) for name, (outs, _) in self.made.items()}
            self.extras_read = dict.fromkeys(self.extras_read, reads.UNKNOWN)
            raise

    def out_names(self, urls) -> list[str]:
        """The pages (as ``self.table`` names them: ``chapters/moe.md``) served at ``urls``, a
        browser's ``location.pathname`` each (``/chapters/moe/``, ``/chapters/moe/index.html``);
        a URL of no page is left out."""
        found = (self._urls().get(page_url(url)) for url in urls)
        return [name for name in dict.fromkeys(found) if name in self.table]

    def _presets_edited(self, presets, first=(), shown=None) -> list[str] | None:
        from book import site
        from book.notebooks import write_notebooks
        from derivations import inputs
        from units import reads

        changed = edited_presets(self.presets, presets)
        reads.forget(changed)
        inputs._CHECKED_PARAMETERS.clear()  # a user's parameter is checked again
        makers = site.makers(presets)
        if set(makers) != set(self.made):
            return None
        table, made = dict(self.table), dict(self.made)
        self.timings = {}  # seconds each maker computed again took (the builder's log says)

        def compute(names) -> bool:
            """Compute again the makers ``names`` that read an edited preset; False when one of
            them made other pages than before."""
            for name in names:
                outs, got = self.made[name]
                if not reads.touches(got, changed):
                    continue
                start = time.monotonic()
                with reads.recording() as got:
                    part = makers[name]()
                self.timings[name] = time.monotonic() - start
                if set(part) != set(outs):
                    return False
                made[name] = (tuple(part), frozenset(got))
                table.update(part)
            return True

        extras_read, made_again = dict(self.extras_read), []
        fresh = self.docs.parent / "docs-next"
        copied: list[str] = []  # files besides the pages copied into the site

        def extras(names, texts: dict) -> bool:
            """Make again the extras ``names`` that read an edited preset, copy each file that
            changed into the site (the tutorial's Markdown into ``texts``); False when one is
            not in the site (only a full build is right then)."""
            for name, make in _extras(presets).items():
                if name in names and reads.touches(extras_read[name], changed):
                    start = time.monotonic()
                    with reads.recording() as got:
                        make(fresh)
                    self.timings[name] = time.monotonic() - start
                    extras_read[name] = frozenset(got)
                    made_again.append(name)
            for path in sorted(p for p in fresh.rglob("*") if p.is_file()):
                name = path.relative_to(fresh).as_posix()
                if not (self.docs / name).is_file():
                    return False
                if _same(path, self.docs / name):
                    continue
                if name.endswith(".md"):  # the tutorial
                    texts[name] = path.read_text(encoding="utf-8")
                else:
                    shutil.copyfile(path, self.site / name)
                    shutil.copyfile(path, self.docs / name)
                    copied.append(name)
            shutil.rmtree(fresh, ignore_errors=True)
            return True

        shutil.rmtree(fresh, ignore_errors=True)
        try:
            wanted = set(self.out_names(first))
            early_makers = [name for name in self.made if wanted & set(self.made[name][0])]
            if not compute(early_makers):
                return None
            early: dict[str, str] = {}  # the open pages rebuilt first: out_name -> URL
            if wanted:  # every page loads the calculators' data: it comes first too
                if not extras({"calculators' data"}, {}):
                    return None
                for out_name in sorted(wanted):
                    if any(
                        made[n] is not self.made[n] and out_name in made[n][0] for n in early_makers
                    ):
                        template, ctx = table[out_name]
                        markdown = site.page_markdown(self.env, template, ctx, out_name)
                        if markdown != (self.docs / out_name).read_text(encoding="utf-8"):
                            early[out_name] = self._build_page(out_name, markdown)
            if early and shown is not None:
                shown(list(early.values()))
            late = len(copied)  # the open pages' scripts are in the site before they reload
            if not compute([name for name in self.made if name not in early_makers]):
                return None
            again = [name for name in made if made[name] is not self.made[name]]
            texts, chapters = {}, {}
            for out_name in (out_name for name in again for out_name in made[name][0]):
                template, ctx = table[out_name]
                text = site.rendered(self.env, template, ctx)
                if out_name.startswith("chapters/"):
                    chapters[out_name.removeprefix("chapters/").removesuffix(".md")] = text
                markdown = site.page_markdown(self.env, template, ctx, out_name, text)
                if markdown != (self.docs / out_name).read_text(encoding="utf-8"):
                    texts[out_name] = markdown
            write_notebooks(fresh / "notebooks", chapters, presets)  # the chapters computed
            if not extras(set(_extras(presets)) - set(made_again), texts):
                return None
            rebuilt = [*early.values(), *(self._build_page(n, t) for n, t in texts.items())]
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
        self.presets, self.table, self.made = presets, table, made
        self.extras_read = extras_read
        self.computed, self.copied, self.copied_late = again + made_again, copied, copied[late:]
        return rebuilt

    def _build_page(self, out_name: str, markdown: str) -> str:
        """Markdown -> one HTML page with mkdocs' kept configuration, navigation and theme; on a
        warning or error the page's Markdown and HTML are put back."""
        from mkdocs.commands.build import _build_page, _populate_page
        from mkdocs.structure.files import Files, InclusionLevel

        from book import site
        from units import ChalkboardError

        config, files, nav, env = (self.mk[k] for k in ("config", "files", "nav", "env"))
        file = files.get_file_from_path(out_name)
        source = self.docs / out_name
        target = Path(file.abs_dest_path)
        old_markdown = source.read_text(encoding="utf-8")
        old_html = target.read_bytes() if target.is_file() else None
        source.write_text(markdown, encoding="utf-8")  # figures are held back by the hooks
        with site._captured_logs() as warnings:
            try:
                _populate_page(file.page, config, files)
                autorefs = config.plugins.get("autorefs")
                if autorefs is not None:  # it resolves cross-references when the env is ready
                    autorefs.on_env(env, config=config, files=Files([file]))
                doc_files = files.documentation_pages(inclusion=InclusionLevel.is_included)
                _build_page(file.page, config, doc_files, nav, env)
                file.page.validate_anchor_links(
                    files=files, log_level=config.validation.links.anchors
                )
                failure = " | ".join(warnings[:3])
            except Exception as e:  # noqa: BLE001 - reported as one line, the page put back
                failure = " | ".join([*warnings[:3], f"{type(e).__name__}: {e}"])
        if failure:
            source.write_text(old_markdown, encoding="utf-8")
            if old_html is not None:
                target.write_bytes(old_html)
            raise ChalkboardError(f"{out_name}: {failure}")
        return "/" + file.url


def _early_pages(docs: Path, out: Path, texts: dict[str, str]) -> dict[str, tuple[str, str]]:
    """The HTML of the pages ``texts`` (Markdown by name) written into ``out`` by mkdocs (strict)
    as a full build would make it, the site's other pages being ``docs``'s Markdown (only
    listed, not read: the navigation's titles are mkdocs.yml's); the search plugin is left out.
    Returns each page's URL path and HTML file's path in ``out``, by name."""
    import logging

    from mkdocs.commands.build import _build_page, _populate_page, get_files, get_navigation
    from mkdocs.config import load_config
    from mkdocs.structure.files import InclusionLevel
    from mkdocs.structure.pages import Page

    from book import site
    from units import ChalkboardError

    logging.getLogger("mkdocs").setLevel(logging.WARNING)
    built = {}
    with site._captured_logs() as warnings:
        config = load_config(str(MKDOCS_YML), docs_dir=str(docs), site_dir=str(out), strict=True)
        site._add_user_chapters(config["nav"])
        config = config.plugins.on_config(config)
        config.plugins.on_pre_build(config=config)
        files = get_files(config)
        env = config.theme.get_env()
        files.add_files_from_theme(env, config)
        files = config.plugins.on_files(files, config=config)
        nav = get_navigation(files, config)
        nav = config.plugins.on_nav(nav, config=config, files=files)
        events = config.plugins.events["page_context"]
        events[:] = [e for e in events if not _search_plugin(getattr(e, "__self__", None))]
        pages = []
        for out_name, text in texts.items():
            file = files.get_file_from_path(out_name)
            if file is None:
                continue
            if file.page is None:
                Page(None, file, config)
            file.content_string = text
            _populate_page(file.page, config, files)
            pages.append((out_name, file))
        env = config.plugins.on_env(env, config=config, files=files)
        doc_files = files.documentation_pages(inclusion=InclusionLevel.is_included)
        for out_name, file in pages:
            _build_page(file.page, config, doc_files, nav, env)
            built[out_name] = ("/" + file.url, file.dest_uri)
    if warnings:
        raise ChalkboardError(" | ".join(warnings[:3]))
    return built


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _extras(presets) -> dict:
    """The files a build makes from the presets besides the pages (book.site.render), by name:
    each writes its file(s) into the folder it is given."""
    from book import site
    from book.calculators import calculators_js
    from book.cards import write_exports

    return {
        "flashcard exports": lambda into: write_exports(into / "exports", presets),
        "calculators' data": lambda into: site._write(
            into / CALCULATORS_DATA, calculators_js(presets)
        ),
        "tutorial": lambda into: site._write(into / "tutorial.md", site.tutorial_markdown()),
    }


def edited_presets(old, new) -> set[tuple]:
    """What differs between two loads of the presets, as :mod:`units.reads` names reads: each
    field (or field's source) edited as ``(kind, id, name)``, with ``(kind, id, ALL)`` when a
    name was added or removed; a preset added, removed or moved to another file as ``(kind,
    id)`` with ``(kind, ALL)``.

    >>> from units.presets import load
    >>> edited_presets(load(), load())
    set()
    """
    from units.reads import ALL

    out: set[tuple] = set()
    for kind in old.by_kind.keys() | new.by_kind.keys():
        a, b = dict(old.by_kind.get(kind, {}).items()), dict(new.by_kind.get(kind, {}).items())
        for preset_id in a.keys() | b.keys():
            if preset_id not in a or preset_id not in b or a[preset_id].path != b[preset_id].path:
                out |= {(kind, preset_id), (kind, ALL)}
                continue
            for prefix, x, y in (
                ("", a[preset_id].fields, b[preset_id].fields),
                ("source:", a[preset_id].sources, b[preset_id].sources),
            ):
                x, y = dict(x.items()), dict(y.items())
                for name in x.keys() | y.keys():
                    if name not in x or name not in y:
                        out |= {(kind, preset_id, prefix + name), (kind, preset_id, prefix + ALL)}
                    elif repr(x[name]) != repr(y[name]):  # units as written: "141 GB" or "0.141 TB"
                        out.add((kind, preset_id, prefix + name))
    return out


def _same(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes (False when one is missing)."""
    try:
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _html_of(url: str) -> str:
    """The HTML file of a page's URL path in a site (directory URLs).

    >>> _html_of("/chapters/moe/"), _html_of("/")
    ('chapters/moe/index.html', 'index.html')
    """
    path = page_url(url).lstrip("/")
    return path + "index.html" if not path or path.endswith("/") else path


def _search_plugin(plugin) -> bool:
    return type(plugin).__module__.startswith(("material.plugins.search", "mkdocs.contrib.search"))


def _builder(argv: list[str]) -> int:
    """The builder process: build, answer one line, then rebuild pages on request."""
    import argparse
    import traceback

    parser = argparse.ArgumentParser(prog="python -m book.serve")
    parser.add_argument("--into", required=True)
    parser.add_argument("--presets", action="append", default=[])
    parser.add_argument("--extra", action="append", default=[])
    parser.add_argument("--previous")  # the served builder's folder: its Markdown and site
    parser.add_argument("--first", action="append", default=[])  # the URLs open in a browser
    args = parser.parse_args(argv)
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # stray prints go to the log, never into the replies

    def answer(**reply) -> None:
        replies.write(json.dumps(reply) + "\n")
        replies.flush()

    def failure(e: BaseException) -> str:
        from units import ChalkboardError
        from units.registry import one_line

        traceback.print_exc()  # the builder's log
        if isinstance(e, ChalkboardError):
            return one_line(str(e))
        return one_line(f"internal error ({type(e).__name__}: {e})")

    started, cpu = time.monotonic(), time.process_time()  # the libraries imported before
    try:
        import derivations
        from book.site import RARELY

        gc.set_threshold(*RARELY)  # this process only builds (book.site.collected_rarely)
        for path in args.extra:
            derivations.load_extra(path)

        imported = time.monotonic() - started

        def early(urls: list[str], files: list[str], timings: dict) -> None:  # ahead of the rest
            timings = {"imports": imported, **timings}
            used = time.process_time() - cpu
            print(f"pages shown first: {urls} {files}; seconds {timings}, CPU {used}", flush=True)
            answer(ok=True, early=True, pages=urls, files=files, overlay=str(into / "early"),
                   timings=timings, cpu=used)  # fmt: skip

        into = Path(args.into)
        previous = Path(args.previous) if args.previous else None
        pages = Pages(into, args.presets, previous, args.first, early)
    except Exception as e:  # noqa: BLE001 - one line to the server
        answer(ok=False, error=failure(e))
        return 1
    answer(ok=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            said = {}
            if request.get("presets"):

                def shown(urls: list[str]) -> None:  # the open pages, rebuilt before the rest
                    answer(ok=True, early=True, pages=urls)

                rebuilt = pages.presets_edited(request.get("first", ()), shown)
                said = {
                    "computed": pages.computed,
                    "files": pages.copied,
                    "files_late": pages.copied_late,
                }
                print(f"preset edit: computed again in s {pages.timings}", flush=True)
            else:
                rebuilt = pages.rebuild(request["templates"])
        except Exception as e:  # noqa: BLE001
            answer(ok=False, error=failure(e))
        else:
            if rebuilt is None:
                answer(ok=False, full=True, error="a page was added or removed")
            else:
                answer(ok=True, pages=rebuilt, **said)
    return 0


if __name__ == "__main__":
    sys.exit(_builder(sys.argv[1:]))
