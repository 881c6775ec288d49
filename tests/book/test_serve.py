"""``chalkboard serve`` (book/serve.py): rebuilds, live reload, errors, the 404 page, SIGTERM.

The live tests start one server on a free loopback port, on a copy of the sources in a temporary
folder (so editing its templates touches nothing here), with TMPDIR pointing at a folder of its
own and a user's module (``--extra``, tests/fixtures/my_derivations.py) whose chapter the build
must add to the book, and drive the served chapter in headless Chromium. Every wait has a
timeout and the server's whole process group is killed at the end whatever happened. The first
build is a full build of the book (about a minute on an idle two-core machine, a quarter of that
when it starts after the session's build has cached its proofs and figures:
``sitebuild.wait_cached``); the rest takes seconds.
"""

import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import jinja2
import pytest

from book import serve
from book.cli import main
from tests import sitebuild

ROOT = Path(__file__).resolve().parents[2]
FIRST_BUILD = 900  # seconds: a whole build on a loaded machine, never an endless wait
STEP = 60  # seconds for anything after it
CHAPTER = "chapters/batching.md.j2"
EXTRA = ROOT / "tests" / "fixtures" / "my_derivations.py"  # a user's module with its own chapter
PRESETS_REBUILT = r"rebuilt .* \(units/data/hardware.toml changed"  # the line of a preset edit


# -- without a server -------------------------------------------------------------------------


def test_the_reload_script_goes_before_the_end_of_body():
    page = serve.inject(b"<html><body><p>x</p></body></html>", "abc")
    assert page.startswith(b"<html><body><p>x</p><script>") and page.endswith(b"</body></html>")
    assert b'var build = "abc"' in page and serve.LIVE.encode() in page
    assert serve.inject(b"<p>no body</p>", "abc").startswith(b"<p>no body</p><script>")


def test_only_template_edits_are_rebuilt_page_by_page():
    templates = serve.TEMPLATES
    assert serve.template_names([templates / "_macros.j2", templates / CHAPTER]) == [
        "_macros.j2",
        CHAPTER,
    ]
    for other in (ROOT / "units" / "data" / "hardware.toml", serve.HERE / "site.py"):
        assert serve.template_names([templates / CHAPTER, other]) is None
    assert serve.template_names([serve.HERE / "assets" / "x.j2"]) is None  # not a page template


def test_preset_files_are_read_again_by_the_running_builder(tmp_path):
    data = ROOT / "units" / "data"
    assert serve.preset_files([data / "hardware.toml", data / "prices.toml"])
    mine = tmp_path / "my_chips.toml"
    assert not serve.preset_files([mine])  # not a presets file of this serve
    assert serve.preset_files([mine], user_presets=[mine])
    assert not serve.preset_files([data / "hardware.toml", serve.HERE / "site.py"])
    assert not serve.preset_files([])


def test_a_preset_edit_names_the_fields_it_changed(tmp_path):
    """What a preset edit changed, as units.reads names reads: a field edited; a preset added
    (and with it the list of its kind)."""
    from units.presets import BUILTIN_FILES, _load
    from units.reads import ALL

    files = []
    for path in BUILTIN_FILES:
        files.append(tmp_path / path.name)
        files[-1].write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    hardware = tmp_path / "hardware.toml"
    original = hardware.read_text(encoding="utf-8")
    before = _load(tuple(map(str, files)))
    assert serve.edited_presets(before, before) == set()
    hardware.write_text(original.replace('"141 GB"', '"143 GB"'), encoding="utf-8")
    _load.cache_clear()
    after = _load(tuple(map(str, files)))
    assert serve.edited_presets(before, after) == {("hardware", "h200", "hbm_capacity")}
    added = '\n[hardware.x1]\nname = "X1"\nsource = "N5"\nhbm_capacity = "1 GB"\n'
    hardware.write_text(original + added + 'hbm_bandwidth = "1 TB/s"\n', encoding="utf-8")
    _load.cache_clear()
    after = _load(tuple(map(str, files)))
    assert serve.edited_presets(before, after) == {("hardware", "x1"), ("hardware", ALL)}
    _load.cache_clear()


def test_the_watcher_sees_edits_and_skips_editor_files(tmp_path):
    page = tmp_path / "a.md.j2"
    page.write_text("one")
    before = serve.snapshot([tmp_path])
    (tmp_path / ".a.md.j2.swp").write_text("swap")
    (tmp_path / "a.md.j2~").write_text("backup")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "x.pyc").write_bytes(b"")
    assert serve.changed(before, serve.snapshot([tmp_path])) == []
    page.write_text("one two")
    (tmp_path / "new.j2").write_text("")
    assert serve.changed(before, serve.snapshot([tmp_path])) == [page, tmp_path / "new.j2"]


def test_a_template_error_names_the_template_and_line():
    from book import site
    from units import ChalkboardError

    env = jinja2.Environment(
        loader=jinja2.DictLoader({"p.md.j2": "fine\n{% if %}\n", "q.md.j2": "{{ gone }}"}),
        undefined=jinja2.StrictUndefined,
    )
    with pytest.raises(ChalkboardError, match=r"template p\.md\.j2 line 2: "):
        site.page_markdown(env, "p.md.j2", {})
    with pytest.raises(ChalkboardError, match=r"template q\.md\.j2: 'gone' is undefined"):
        site.page_markdown(env, "q.md.j2", {})


def test_a_browser_that_goes_away_mid_answer_prints_nothing(capsys):
    """A reload or a closed tab ends a held long poll; the answer then meets a closed socket."""
    server = serve.make_server(0, serve.make_handler(serve.State()))
    try:
        for gone in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "reset")):
            try:
                raise gone
            except ConnectionError:
                server.handle_error(None, ("127.0.0.1", 1))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("a bug")
        except ValueError:
            server.handle_error(None, ("127.0.0.1", 1))
        assert "ValueError: a bug" in capsys.readouterr().err  # anything else is still reported
    finally:
        server.server_close()


def test_a_busy_port_is_one_error_line_and_leaves_no_temporary_folder(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        out, err = io.StringIO(), io.StringIO()
        code = main(["serve", "--port", str(busy.getsockname()[1])], out=out, err=err)
    assert code == 2 and out.getvalue() == ""
    assert re.fullmatch(r"error: cannot serve on 127\.0\.0\.1:\d+: .+\n", err.getvalue())
    assert list(tmp_path.iterdir()) == []


# -- the server alone, on a small site -------------------------------------------------------


class _Counting(serve.State):
    """A State that counts the long polls held right now."""

    def __init__(self):
        super().__init__()
        self.waiting = 0

    def wait(self, since, timeout, page="", gone=None):
        with self.changed:
            self.waiting += 1
        try:
            return super().wait(since, timeout, page, gone)
        finally:
            with self.changed:
                self.waiting -= 1


def _write_files(folder: Path, files: dict[str, str]) -> None:
    """Write ``files`` (text by path relative to ``folder``), making their folders."""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


@pytest.fixture
def small_site(tmp_path):
    """A server on a free loopback port serving a four-page site (no build: the handler alone)."""
    site = tmp_path / "site"
    _write_files(
        site,
        {
            "index.html": "<html><body>home</body></html>",
            "404.html": "<html><body>the site's own 404</body></html>",
            "chapters/batching/index.html": "<html><body>batching</body></html>",
            "assets/style.css": "body {}",
        },
    )
    state = _Counting()
    state.publish(site=site)
    server = serve.make_server(0, serve.make_handler(state))
    thread = __import__("threading").Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )  # shutdown() waits for the next poll: 0.5 s per test with the default
    thread.start()
    try:
        yield server, state
    finally:
        state.close()
        server.shutdown()
        server.server_close()


def _raw(server, request: bytes, timeout: float = STEP) -> bytes:
    """The server's whole answer to ``request`` sent as is."""
    with socket.create_connection(server.server_address, timeout=timeout) as s:
        s.sendall(request)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _get(server, path: str, host: str | None = "127.0.0.1") -> tuple[int, bytes]:
    port = server.server_address[1]
    head = f"GET {path} HTTP/1.1\r\nConnection: close\r\n"
    if host is not None:
        head += f"Host: {host.format(port=port)}\r\n"
    answer = _raw(server, (head + "\r\n").encode("latin-1"))
    status = int(answer.split(b" ", 2)[1])
    return status, answer.partition(b"\r\n\r\n")[2]


def test_a_page_rebuilt_first_reloads_alone_and_once(small_site):
    """A page rebuilt ahead of the rest (a preset edit's open page) gets a build id of its own:
    its long poll answers, another page's does not; the build of the whole site that follows
    leaves it as it is (``keep``) and reloads the others. The pages long-polled are the ones
    shown, a page's URL with or without its index.html."""
    import threading

    server, state = small_site
    _, page = _get(server, "/chapters/batching/")
    build = re.search(rb'var build = "([0-9a-f]+)"', page)[1].decode()
    assert build == state.build
    answers = {}

    def poll(path):
        answers[path] = state.wait(build, STEP, path)

    polls = [threading.Thread(target=poll, args=(p,)) for p in ("/", "/chapters/batching/")]
    for t in polls:
        t.start()
    deadline = time.monotonic() + STEP
    while state.waiting < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert state.shown() == ["/", "/chapters/batching/"]
    state.publish(pages=["/chapters/batching/index.html"])
    polls[1].join(STEP)
    assert answers == {"/chapters/batching/": state.build_of("/chapters/batching/")}
    assert answers["/chapters/batching/"] != build and state.build_of("/") == build
    _, page = _get(server, "/chapters/batching/")
    assert answers["/chapters/batching/"].encode() in page  # the reloaded page's own build
    state.publish(keep=["/chapters/batching/"])  # the rest rebuilt: the others reload
    polls[0].join(STEP)
    assert answers["/"] == state.build != build
    assert state.build_of("/chapters/batching/") == answers["/chapters/batching/"]
    state.publish()  # a later build of the whole site reloads every page
    assert state.build_of("/chapters/batching/") == state.build


def test_pages_shown_ahead_of_a_full_build_are_served_over_the_site(small_site, tmp_path):
    """A full build's pages built ahead of it (and the script they load) are served over the
    site, with a build id of their own, until the site changes; a page rebuilt in the site
    meanwhile is the site's again; a build stopped drops them without a reload."""
    server, state = small_site
    overlay = tmp_path / "early"
    _write_files(
        overlay,
        {
            "chapters/batching/index.html": "<html><body>batching, early</body></html>",
            "javascripts/data.js": "early data",
            "index.html": "<html><body>home, not overlaid</body></html>",
        },
    )
    (state.site / "javascripts").mkdir()
    (state.site / "javascripts" / "data.js").write_text("site data")
    site_build = state.build
    shown = ["/chapters/batching/"]
    state.publish(pages=shown, overlay=(overlay, [*shown, "/javascripts/data.js"]))
    for path in ("/chapters/batching/", "/chapters/batching/index.html"):
        _, body = _get(server, path)
        assert b"batching, early" in body and state.build_of(path).encode() in body
    assert state.build_of("/chapters/batching/") != site_build == state.build_of("/")
    assert _get(server, "/javascripts/data.js") == (200, b"early data")
    assert b"<body>home<script" in _get(server, "/")[1]  # only what the overlay serves
    state.publish(pages=["/chapters/batching/index.html"])  # rebuilt in the site meanwhile
    assert b"<body>batching<script" in _get(server, "/chapters/batching/")[1]
    assert _get(server, "/javascripts/data.js") == (200, b"early data")
    state.publish(pages=shown, overlay=(overlay, [*shown, "/javascripts/data.js"]))
    build = state.build_of("/chapters/batching/")
    state.drop_overlay()  # the build stopped: the site's again, and no browser reloads
    assert b"<body>batching<script" in _get(server, "/chapters/batching/")[1]
    assert _get(server, "/javascripts/data.js") == (200, b"site data")
    assert state.build_of("/chapters/batching/") == build
    state.publish(pages=shown, overlay=(overlay, shown))
    state.publish(site=state.site)  # the full build's site: no overlay
    assert b"<body>batching<script" in _get(server, "/chapters/batching/")[1]


def test_only_the_browsers_whose_page_changed_reload(tmp_path, monkeypatch):
    """After a rebuild the pages rebuilt reload, the others stay; a script every page loads
    changed (the calculators' data) reloads every page, except one rebuilt first when the
    script changed before it was."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    state = serve.State()
    preview = serve.Preview(state, [], io.StringIO(), io.StringIO())
    try:

        def builds():
            return {page: state.build_of(page) for page in ("/a/", "/b/", "/c/")}

        def reloaded(*args):
            before = builds()
            time.sleep(0.001)  # build ids are the clock's nanoseconds
            preview._reload(*args)
            return sorted(page for page, build in builds().items() if build != before[page])

        assert reloaded(["/a/"], [], (), ()) == ["/a/"]  # a template edit
        state.publish(pages=["/a/"])  # a preset edit's open page, rebuilt first
        script = ["javascripts/calculators-data.js"]
        assert reloaded(["/a/", "/c/"], ["/a/"], ["exports/flashcards.apkg"], []) == ["/c/"]
        state.publish(pages=["/a/"])
        assert reloaded(["/a/", "/c/"], ["/a/"], script, []) == ["/b/", "/c/"]
        state.publish(pages=["/a/"])
        assert reloaded(["/a/", "/c/"], ["/a/"], script, script) == ["/a/", "/b/", "/c/"]
    finally:
        preview.close()


class _Answers:
    """A builder that gives the answers it was made with (no process)."""

    def __init__(self, folder: Path, *answers: dict):
        self.folder, self.answers, self.started = folder, list(answers), time.monotonic()
        self.site, self.stopped = folder / "site", False

    def reply(self, timeout):
        return self.answers.pop(0) if self.answers else {}

    def stop(self):
        self.stopped = True


def _write_page(site: Path, url: str, text: str) -> None:
    path = site / serve._html_of(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.mark.parametrize("end", ["failed", "same", "otherwise"])
def test_pages_shown_ahead_of_a_full_build_that_fails_or_ends(tmp_path, monkeypatch, end):
    """The early answer of a full build publishes its pages over the site and says so in a line.
    The build fails: the last good site is served again, those pages reload to it, and one
    error line says so. It succeeds: its site is served, and a page shown ahead reloads only if
    the full build made it otherwise."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    state, out, err = serve.State(), io.StringIO(), io.StringIO()
    preview = serve.Preview(state, [], out, err)
    monkeypatch.setattr(preview, "_start_spare", lambda: None)  # no process in this test
    old, overlay = _Answers(tmp_path / "old"), tmp_path / "new" / "early"
    data = "javascripts/calculators-data.js"
    for site in (old.site, overlay.parent / "site"):
        _write_page(site, "/" + data, "data")
    _write_page(old.site, "/a/", "old a")
    _write_page(overlay, "/a/", "new a")
    _write_page(overlay.parent / "site", "/a/", "new a" if end == "same" else "new a, other")
    state.publish(site=old.site)
    preview.current, preview.reason = old, "derivations/x.py changed"
    early = {"ok": True, "early": True, "pages": ["/a/"], "files": [], "overlay": str(overlay)}
    final = {"ok": False, "error": "boom"} if end == "failed" else {"ok": True}
    preview.pending = new = _Answers(tmp_path / "new", early, final)
    try:
        site_build = state.build
        preview.check()
        assert state.folder("/a/") == overlay and state.folder("/b/") == old.site
        shown = state.build_of("/a/")
        assert shown != site_build and state.build_of("/b/") == site_build
        assert re.fullmatch(
            r"\d\d:\d\d:\d\d showed /a/ first in [\d.]+ s \(derivations/x\.py changed; the rest "
            r"follows\)\n",
            out.getvalue().splitlines(keepends=True)[-1],
        )
        preview.check()
        if end == "failed":
            assert state.folder("/a/") == old.site and state.site == old.site
            assert state.build_of("/a/") not in (shown, site_build)  # back to the last good
            assert state.build_of("/b/") == site_build  # no other page reloads
            assert err.getvalue().endswith("boom; still serving the last good site\n")
            assert new.stopped and not old.stopped and preview.current is old
        else:
            assert state.site == new.site and state.folder("/a/") == new.site
            assert (state.build_of("/a/") == shown) == (end == "same")
            assert state.build_of("/b/") not in (shown, site_build)
            assert old.stopped and preview.current is new and err.getvalue() == ""
    finally:
        preview.current = preview.pending = None
        preview.close()


def test_a_closed_tab_is_no_longer_a_page_shown(small_site):
    """A long poll whose browser went away stops counting as a page shown within a second (a
    preset edit rebuilds the pages shown first), not when its wait would have ended."""
    server, state = small_site
    port = server.server_address[1]
    request = (
        f"GET {serve.LIVE}?since={state.build}&page=%2Fchapters%2Fbatching%2F HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    ).encode()
    deadline = time.monotonic() + STEP
    with socket.create_connection(server.server_address, timeout=STEP) as s:
        s.sendall(request)
        while state.shown() != ["/chapters/batching/"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert state.shown() == ["/chapters/batching/"]
    closed = time.monotonic()
    while state.shown() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert state.shown() == []
    assert time.monotonic() - closed < serve.LIVE_WAIT / 2  # 0.5 s on an idle machine


def test_a_null_byte_in_the_path_is_400_and_no_traceback(small_site, capfd):
    server, _ = small_site
    for path in ("/%00", "/chapters/%00/", "/a%00b.html"):
        assert _get(server, path)[0] == 400
    assert _get(server, "/")[0] == 200  # still serving
    assert capfd.readouterr().err == ""


def test_a_folder_without_an_index_is_the_404_page_not_a_listing(small_site):
    server, _ = small_site
    for path in ("/assets/", "/chapters/", "/assets"):
        status, body = _get(server, path)
        assert status == 404 and b"the site's own 404" in body, path
        assert b"Directory listing" not in body
    assert _get(server, "/chapters/batching/")[0] == 200
    assert _get(server, "/assets/style.css") == (200, b"body {}")


@pytest.mark.parametrize(
    "host, status",
    [
        ("127.0.0.1:{port}", 200),
        ("localhost:{port}", 200),
        ("LOCALHOST", 200),
        ("127.0.0.1", 200),
        ("attacker.example:{port}", 421),  # DNS rebinding: a page of another site
        ("attacker.example", 421),
        ("127.0.0.1.attacker.example", 421),
        ("localhost.attacker.example:{port}", 421),
        ("0.0.0.0:{port}", 421),
        ("", 421),
        (None, 400),
    ],
)
def test_only_loopback_host_names_are_answered(small_site, host, status):
    server, _ = small_site
    assert _get(server, "/", host)[0] == status
    assert _get(server, serve.LIVE + "?since=x", host)[0] == status


def test_a_connection_that_sends_nothing_is_closed(small_site, monkeypatch, capfd):
    server, _ = small_site
    monkeypatch.setattr(serve, "IDLE_TIMEOUT", 0.5)
    start = time.monotonic()
    with socket.create_connection(server.server_address, timeout=STEP) as s:
        assert s.recv(1) == b""  # closed by the server, not by this timeout
    assert time.monotonic() - start < 10
    assert capfd.readouterr().err == ""


def test_200_browsers_long_polling_at_once_are_all_answered(small_site):
    """Each open page holds one long poll; 200 connections arrive in one burst (a reload of
    many tabs). The listen backlog holds them until they are accepted."""
    import selectors

    server, state = small_site
    assert server.request_queue_size >= 128
    port = server.server_address[1]
    request = (
        f"GET {serve.LIVE}?since={state.build} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    sel = selectors.DefaultSelector()
    answers: dict[socket.socket, bytes] = {}
    try:
        for _ in range(200):  # one burst, faster than the server accepts them
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(server.server_address)
            sel.register(s, selectors.EVENT_WRITE)
        start = time.monotonic()
        published = False
        while sel.get_map() and time.monotonic() < start + 40:
            # publish once all 200 are held (or after 10 s): every held poll answers at once
            if not published and (state.waiting == 200 or time.monotonic() > start + 10):
                state.publish()
                published = True
            for key, events in sel.select(timeout=0.1):
                s = key.fileobj
                if events & selectors.EVENT_WRITE:  # connected
                    s.sendall(request)
                    sel.modify(s, selectors.EVENT_READ)
                elif chunk := s.recv(65536):
                    answers[s] = answers.get(s, b"") + chunk
                else:  # the whole answer came
                    sel.unregister(s)
        held = [a for a in answers.values() if a.startswith(b"HTTP/1.0 200")]
    finally:
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        for s in answers:
            s.close()
        sel.close()
    assert len(held) == 200
    assert all(a.endswith(state.build.encode()) for a in held)


# -- one live server --------------------------------------------------------------------------


class Server:
    """A ``chalkboard serve`` process on a copy of the sources; its output lands in files."""

    def __init__(self, root: Path):
        self.src, self.tmp = root / "src", root / "tmp"
        self.tmp.mkdir()
        for name in ("units", "derivations", "book"):
            # with their bytecode, where there is some (``make test`` compiles it first): the
            # server and each builder it starts import them; a file edited here is compiled again
            # (its size and time differ from its bytecode's; the copies keep the originals' times)
            shutil.copytree(ROOT / name, self.src / name)
        shutil.copy(ROOT / "mkdocs.yml", self.src / "mkdocs.yml")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.out, self.err = root / "out.log", root / "err.log"
        env = dict(os.environ, TMPDIR=str(self.tmp), PYTHONPATH=str(self.src))
        env.pop("CHALKBOARD_PRESETS", None)
        with self.out.open("w") as out, self.err.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "book.cli", "--extra", str(EXTRA), "serve"]
                + ["--port", str(self.port)],
                cwd=self.src,
                env=env,
                stdout=out,
                stderr=err,
                start_new_session=True,  # its own process group: the builder is killed with it
                preexec_fn=_stop_with_parent,
            )

    def lines(self, which: str = "out") -> list[str]:
        return (self.out if which == "out" else self.err).read_text().splitlines()

    def wait_for(self, pattern: str, which: str = "out", timeout: float = STEP, after: int = 0):
        """The first line (from line ``after`` on) that matches; fails with the logs on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines(which)[after:]:
                if re.search(pattern, line):
                    return line
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        pytest.fail(
            f"no line matching {pattern!r} in {timeout} s; out: {self.lines('out')[-5:]}; "
            f"err: {self.lines('err')[-5:]}"
        )

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=STEP) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def edit(self, template: str, change) -> None:
        path = self.src / "book" / "templates" / template
        path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")

    def kill(self) -> None:
        with _suppress_lookup():
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=STEP)


def _stop_with_parent() -> None:
    """SIGTERM the server if this test process dies (Linux), so it never outlives a killed run."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)


class _suppress_lookup:  # noqa: N801 - a tiny context manager
    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return kind is ProcessLookupError


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from tests.book.browser import chromium_path

    chromium_path()  # fails loudly without a browser, before the long build
    # the session's own build of the book, if one runs, writes the proofs and figures this
    # build needs into the session's cache: read them rather than compute them beside it
    sitebuild.wait_cached()
    srv = Server(tmp_path_factory.mktemp("serve"))
    try:
        srv.wait_for(r"built the site in", timeout=FIRST_BUILD)
        yield srv
    finally:
        srv.kill()


def test_an_unknown_url_gets_the_sites_own_404_page(server):
    status, body = server.get("/no/such/page/")
    assert status == 404
    assert "<title>Chalkboard</title>" in body and 'class="md-content"' in body  # the theme's
    status, body = server.get("/chapters/batching/")
    assert status == 200 and serve.LIVE in body


def test_a_users_chapter_joins_the_strict_build_and_its_navigation(server):
    """``--extra``: the user's chapter is rendered, joins mkdocs' navigation
    (book.site._add_user_chapters) and passes the strict build with the book (the same
    book.site.render and _mkdocs_build as ``chalkboard --extra FILE build``)."""
    status, page = server.get("/chapters/my_derivations/")
    assert status == 200
    assert "Tokens per dollar at the cost floor" in page  # the user's equation, shown
    assert "The reciprocal of the compute-bound cost per token." in page
    _, home = server.get("/")
    assert 'href="chapters/my_derivations/"' in home  # in the nav


def _without_build_id(page: str) -> str:
    return re.sub(r'var build = "[0-9a-f]+"', "", page)


def test_a_template_edit_reloads_the_open_page_by_itself(server, browser):
    _, built = server.get("/chapters/batching/")  # by the full build
    page = browser.new_page()
    try:
        page.goto(server.url + "/chapters/batching/", wait_until="load")
        page.wait_for_timeout(300)  # the page's long poll is waiting
        before = len(server.lines())
        start = time.monotonic()
        server.edit(CHAPTER, lambda text: text.replace("\n# ", "\nLivepreviewmarker.\n\n# ", 1))
        page.wait_for_function(
            "() => document.body && document.body.innerText.includes('Livepreviewmarker')",
            timeout=STEP * 1000,
            polling=25,
        )
        seconds = time.monotonic() - start
    finally:
        page.close()
    line = server.wait_for(r"rebuilt /chapters/batching/ in [\d.]+ s", after=before)
    assert CHAPTER in line
    print(f"template edit to reloaded page: {seconds:.2f} s ({line})")
    assert seconds < 10  # well under 1 s on an idle machine; generous for a loaded CI runner
    before = len(server.lines())
    server.edit(CHAPTER, lambda text: text.replace("\nLivepreviewmarker.\n", "", 1))
    server.wait_for(r"rebuilt /chapters/batching/", after=before)
    _, rebuilt = server.get("/chapters/batching/")
    assert _without_build_id(rebuilt) == _without_build_id(built)  # as the full build made it


def _computed(line: str) -> list[str]:
    """The page makers a preset edit computed again, as its line names them."""
    found = re.search(r"; computed (.*) again\)$", line)
    assert found, line
    return [] if found[1] == "nothing" else found[1].split(", ")


SHOWN = "() => document.body && document.body.innerText.includes('%s')"
IN_PAGE = "() => document.body && document.body.textContent.includes('%s')"  # shown or folded
NOT_IN_PAGE = "() => document.body && !document.body.textContent.includes('%s')"


def test_a_preset_edit_reloads_the_open_page_first_without_a_full_build(server, browser):
    """The H200's HBM, edited in the copy's hardware.toml, is the served figure after page
    rebuilds by the running builder (no new full build), which computed again only the pages
    that read that figure (units.reads): not the notation or the reversible chapter. A browser
    shows the hardware presets page, which the builder's pass makes last: it is rebuilt before
    the chapters (book.serve: the pages open in a browser first) and reloads by itself, once;
    then the other pages that read the figure are rebuilt. Put back, the pages are the full
    build's and the open page shows the datasheet's figure again."""
    presets = server.src / "units" / "data" / "hardware.toml"
    original = presets.read_text(encoding="utf-8")
    assert original.count('hbm_capacity = "141 GB"') == 1  # the H200's, as the datasheet says
    paths = ("/presets/hardware/", "/chapters/moe/", "/chapters/validation/")
    built = {path: server.get(path)[1] for path in paths}
    assert "141 GB" in built["/presets/hardware/"] and "143 GB" not in built["/presets/hardware/"]
    page = browser.new_page()
    try:
        page.goto(server.url + "/presets/hardware/", wait_until="load")
        page.wait_for_timeout(300)  # the page's long poll is waiting
        before = len(server.lines())
        start = time.monotonic()
        presets.write_text(original.replace('"141 GB"', '"143 GB"'), encoding="utf-8")
        page.wait_for_function(SHOWN % "143 GB", timeout=STEP * 1000, polling=25)
        shown = time.monotonic() - start
        page.evaluate("() => { window.reloadedOnce = true; }")
        first = server.wait_for(r"showed .*/presets/hardware/.* first in", after=before)
        line = server.wait_for(PRESETS_REBUILT, after=before, timeout=FIRST_BUILD)
        rest = time.monotonic() - start
        print(f"preset edit to the open page: {shown:.2f} s ({first})")
        print(f"preset edit to every page rebuilt: {rest:.2f} s ({line})")
        assert server.lines()[before:].index(line) > server.lines()[before:].index(first)
        computed = _computed(line)
        assert {"presets", "chapters/moe", "chapters/validation"} <= set(computed)
        assert "notation" not in computed and "chapters/reversible" not in computed
        _, served = server.get("/presets/hardware/")
        assert "143 GB" in served and "141 GB" not in served
        for path in paths[1:]:  # the rest, rebuilt after the open page (moe: its HBM table)
            assert _without_build_id(server.get(path)[1]) != _without_build_id(built[path])
        assert not [x for x in server.lines()[before:] if "built the site in" in x]
        time.sleep(0.5)  # a second reload would have started by now
        assert page.evaluate("() => window.reloadedOnce === true")  # reloaded once, not twice
        assert shown < 10  # about half a second on an idle machine; generous for a loaded one
        before = len(server.lines())
        presets.write_text(original, encoding="utf-8")
        page.wait_for_function(SHOWN % "141 GB", timeout=STEP * 1000, polling=25)
        server.wait_for(PRESETS_REBUILT, after=before, timeout=FIRST_BUILD)
    finally:
        if presets.read_text(encoding="utf-8") != original:  # a failure above: put it back
            presets.write_text(original, encoding="utf-8")
        page.close()
    for path in paths:
        assert _without_build_id(server.get(path)[1]) == _without_build_id(built[path]), path


def _domain(page: str, chip: str) -> str:
    """The scale-up domain the MoE chapter's every-chip table gives ``chip``."""
    found = re.search(re.escape(chip) + r"</td>\s*<td[^>]*>([^<]*)</td>", page)
    assert found, f"{chip} not in the table"
    return found[1]


def test_a_preset_read_by_listing_every_chip_is_computed_again(server):
    """The MoE chapter's table lists every chip (``presets.hardware.values()``): a figure of one
    of them edited, and a chip added, each reach the page; put back, it is the full build's."""
    presets = server.src / "units" / "data" / "hardware.toml"
    original = presets.read_text(encoding="utf-8")
    _, built = server.get("/chapters/moe/")
    assert _domain(built, "H200 SXM") == "8"
    h200 = original.index("[hardware.h200]")
    domain = original.index('scale_up_domain = "8 chip"', h200)
    edited = original[:domain] + 'scale_up_domain = "16 chip"' + original[domain + 26 :]
    before = len(server.lines())
    presets.write_text(edited, encoding="utf-8")
    line = server.wait_for(PRESETS_REBUILT, after=before, timeout=FIRST_BUILD)
    assert "chapters/moe" in _computed(line)
    _, page = server.get("/chapters/moe/")
    assert _domain(page, "H200 SXM") == "16"
    added = (
        '\n[hardware.servetest_x1]\nname = "Servetest X1"\nsource = "N5"\n'
        'hbm_capacity = "100 GB"\nhbm_bandwidth = "3 TB/s"\nscale_up_domain = "4 chip"\n'
        # with an FP8 rate: the table leaves out chips without one (no FP8 crossover batch)
        'scale_up_topology = "switch"\ndense_flops_fp8 = "1000 TFLOP/s"\n'
    )
    before = len(server.lines())
    presets.write_text(edited + added, encoding="utf-8")
    line = server.wait_for(PRESETS_REBUILT, after=before, timeout=FIRST_BUILD)
    assert {"presets", "chapters/moe"} <= set(_computed(line))
    _, page = server.get("/presets/hardware/")
    assert "Servetest X1" in page
    _, page = server.get("/chapters/moe/")
    assert _domain(page, "Servetest X1") == "4"
    before = len(server.lines())
    presets.write_text(original, encoding="utf-8")
    server.wait_for(PRESETS_REBUILT, after=before, timeout=FIRST_BUILD)
    _, again = server.get("/chapters/moe/")
    assert _without_build_id(again) == _without_build_id(built)
    assert not [x for x in server.lines()[before:] if "built the site in" in x]


PYTHON_EDITED = "book/calculators\\.py changed"  # the reason a line gives for the edit below


def test_a_python_edit_shows_the_open_page_before_the_full_build_ends(server, browser):
    """An edit to Python (book/calculators.py: the label of every calculator on a chapter page)
    needs a full build in a fresh builder (book.serve); that builder builds the page open in a
    browser first, from the served site's Markdown and navigation, and the page is served over
    the site and reloads before the full build ends. A second edit during that build stops it:
    its early page is served no more, and the second build's is shown first in turn. When the
    full build ends its site is served, and the open page, the same HTML as the full build made,
    does not reload again. Put back, every page is the first full build's."""
    module = server.src / "book" / "calculators.py"
    original = module.read_text(encoding="utf-8")
    label = "<summary>Calculator</summary>"
    assert original.count(label) == 1
    path = "/chapters/batching/"
    _, built = server.get(path)
    assert label in built
    page = browser.new_page()
    try:
        page.goto(server.url + path, wait_until="load")
        page.wait_for_timeout(300)  # the page's long poll is waiting
        before = len(server.lines())
        module.write_text(original.replace(label, "<summary>Calculator One</summary>"), "utf-8")
        page.wait_for_function(IN_PAGE % "Calculator One", timeout=FIRST_BUILD * 1000, polling=25)
        assert not [x for x in server.lines()[before:] if "built the site in" in x]
        first = server.wait_for(
            rf"showed {path} first in [\d.]+ s \({PYTHON_EDITED}; ", after=before
        )
        assert "Calculator One" in server.get(path)[1]  # served over the site
        module.write_text(original.replace(label, "<summary>Calculator Two</summary>"), "utf-8")
        page.wait_for_function(IN_PAGE % "Calculator Two", timeout=FIRST_BUILD * 1000, polling=25)
        page.evaluate("() => { window.reloadedOnce = true; }")
        second = server.wait_for(rf"showed {path} first in ", after=server.lines().index(first) + 1)
        line = server.wait_for(
            rf"built the site in .*{PYTHON_EDITED}", after=before, timeout=FIRST_BUILD
        )
        lines = server.lines()[before:]
        assert lines.index(first) < lines.index(second) < lines.index(line)
        assert [x for x in lines if "built the site in" in x] == [line]  # the first was stopped
        _, served = server.get(path)
        assert "Calculator Two" in served and "Calculator One" not in served
        time.sleep(0.5)  # a second reload would have started by now
        assert page.evaluate("() => window.reloadedOnce === true")  # reloaded once, not twice
        before = len(server.lines())
        module.write_text(original, encoding="utf-8")
        page.wait_for_function(
            NOT_IN_PAGE % "Calculator Two", timeout=FIRST_BUILD * 1000, polling=25
        )
        server.wait_for(rf"built the site in .*{PYTHON_EDITED}", after=before, timeout=FIRST_BUILD)
    finally:
        if module.read_text(encoding="utf-8") != original:  # a failure above: put it back
            module.write_text(original, encoding="utf-8")
        page.close()
    assert _without_build_id(server.get(path)[1]) == _without_build_id(built)


def test_a_broken_template_is_one_error_line_and_the_last_good_page_stays(server):
    _, good = server.get("/chapters/batching/")
    errors = len(server.lines("err"))
    server.edit(CHAPTER, lambda text: text + "\n{% if %}\n")
    line = server.wait_for(r"^error: ", which="err", after=errors)
    assert re.search(r"template chapters/batching\.md\.j2 line \d+: .*last good site$", line)
    time.sleep(0.5)
    assert len(server.lines("err")) == errors + 1  # one line, no traceback
    status, body = server.get("/chapters/batching/")
    assert status == 200 and body == good  # the same page, the same build id
    before = len(server.lines())
    server.edit(CHAPTER, lambda text: text.replace("\n{% if %}\n", ""))
    server.wait_for(r"rebuilt ", after=before)


def test_sigterm_stops_cleanly_and_leaves_no_temporary_folder(server):
    assert [p.name for p in server.tmp.iterdir()][0].startswith("chalkboard-serve-")
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=STEP) == 0
    assert list(server.tmp.iterdir()) == []
    assert "stopped" in server.lines()[-1]
    assert not [line for line in server.lines("err") if not line.startswith("error: ")]
    deadline = time.monotonic() + STEP  # the builder (and its node) ended with it
    while time.monotonic() < deadline:
        try:
            os.killpg(server.proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("a process of the server's group outlived it")
