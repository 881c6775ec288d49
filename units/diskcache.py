"""A content-addressed key/value store on disk, for work a build repeats unchanged.

A build checks the same derivation steps with sympy and draws the same figures with matplotlib
every time; both are pure functions of their inputs, so their results are kept on disk under a
hash of those inputs (``derivations.derivation`` keeps proved steps, ``book.figures`` the SVG).
The store lives where the fast CLI keeps its cache (``book.fast.cache_dir``):
``$CHALKBOARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/chalkboard``, else ``~/.cache/chalkboard``, in
``build/<namespace>/<version>/``. ``version`` names everything the stored results depend on
besides the key (library versions, the source of the code that computes them); older versions
are removed. ``CHALKBOARD_FAST=0`` (no shortcuts) or ``CHALKBOARD_CACHE=0`` turns it off.

Safe by construction: a value is written to a temporary file and renamed (a reader sees a whole
entry or none), every entry carries a digest of its key and value and is read back only when
they match (a damaged or foreign entry is a miss, so the caller computes), and a folder that
cannot be written (read-only, full) only costs speed.

>>> import tempfile
>>> store = Store("example", "v1", root=tempfile.mkdtemp())
>>> store.get("k") is None
True
>>> store.put("k", b"value")
>>> store.get("k")
b'value'
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

FORMAT = b"chalkboard-store-1"
KEEP_VERSIONS = 4  # per namespace: older versions (of earlier sources) are removed
FOLDER = "build"  # under the cache root, beside the fast CLI's folders (book/fastcache.py)


def cache_dir() -> Path:
    """The cache root: $CHALKBOARD_CACHE_DIR, else the XDG user cache (``book.fast`` too)."""
    chosen = os.environ.get("CHALKBOARD_CACHE_DIR")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "chalkboard"


def enabled() -> bool:
    """False when CHALKBOARD_FAST=0 or CHALKBOARD_CACHE=0: compute everything, store nothing."""
    return os.environ.get("CHALKBOARD_FAST", "1") != "0" and (
        os.environ.get("CHALKBOARD_CACHE", "1") != "0"
    )


def digest(*parts: str | bytes) -> str:
    """A sha256 hex digest of ``parts``, each length-prefixed (so no two splits collide).

    >>> digest("ab", "c") == digest("a", "bc")
    False
    """
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(b"%d:" % len(data))
        h.update(data)
    return h.hexdigest()


def source_digest(*paths) -> str:
    """A digest of the bytes of the files ``paths`` (the code whose results are stored)."""
    return digest(*(Path(p).read_bytes() for p in paths))


class Store:
    """The entries of one namespace at one version; keys are strings (hashed), values bytes."""

    def __init__(self, namespace: str, version: str, root: str | Path | None = None):
        self.namespace, self.version, self.root = namespace, version, root
        self._pruned = False

    @property
    def folder(self) -> Path:
        """Where the entries are (the cache root is read on each use: tests move it)."""
        root = Path(self.root) if self.root is not None else cache_dir()
        return root / FOLDER / self.namespace / self.version

    def _path(self, key: str) -> tuple[Path, str]:
        name = digest(self.namespace, self.version, key)
        return self.folder / name[:2] / name, name

    def get(self, key: str) -> bytes | None:
        """The value stored under ``key``, or None (absent, damaged, or the store is off)."""
        if not enabled():
            return None
        path, name = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        head, sep, value = data.partition(b"\n")
        if not sep or head != _header(name, value):
            return None
        return value

    def put(self, key: str, value: bytes) -> None:
        """Store ``value`` under ``key``; a store that cannot be written is silently skipped."""
        if not enabled():
            return
        path, name = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            import tempfile  # here, not at the top: book.fast reads cache_dir on every start

            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_header(name, value) + b"\n" + value)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            if not self._pruned:
                self._pruned = True
                _prune(self.folder.parent, keep=self.folder)
        except OSError:
            pass


def _header(name: str, value: bytes) -> bytes:
    return FORMAT + b" " + digest(name, value).encode("ascii")


def _prune(namespace: Path, keep: Path) -> None:
    """Remove all but the newest KEEP_VERSIONS version folders of a namespace."""
    os.utime(keep)  # the version in use is the newest
    folders = [p for p in namespace.iterdir() if p.is_dir()]
    folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in folders[KEEP_VERSIONS:]:
        if old != keep:
            import shutil

            shutil.rmtree(old, ignore_errors=True)
