"""``chalkboard serve`` (book/serve.py): rebuilds, live reload, errors, the 404 page, SIGTERM.

The live tests start one server on a free loopback port, on a copy of the sources in a temporary
folder (so editing its templates touches nothing here), with TMPDIR pointing at a folder of its
own and a user's module (``--extra``, tests/fixtures/my_derivations.py) whose chapter the build
must add to the book, and drive the served chapter in headless Chromium. Every wait has a
timeout and the server's whole process group is killed at the end whatever happened. The first
build is a full build of the book (about a minute on an idle two-core machine); the rest takes
seconds.
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

ROOT = Path(__file__).resolve().parents[2]
FIRST_BUILD = 900  # seconds: a whole build on a loaded machine, never an endless wait
STEP = 60  # seconds for anything after it
CHAPTER = "chapters/batching.md.j2"
EXTRA = ROOT / "tests" / "fixtures" / "my_derivations.py"  # a user's module with its own chapter


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


# -- one live server --------------------------------------------------------------------------


class Server:
    """A ``chalkboard serve`` process on a copy of the sources; its output lands in files."""

    def __init__(self, root: Path):
        self.src, self.tmp = root / "src", root / "tmp"
        self.tmp.mkdir()
        for name in ("units", "derivations", "book"):
            shutil.copytree(
                ROOT / name, self.src / name, ignore=shutil.ignore_patterns("__pycache__")
            )
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
