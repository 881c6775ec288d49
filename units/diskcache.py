"""A content-addressed key/value store on disk, for work a build repeats unchanged, and the trust
rules of every chalkboard cache (this store and the fast CLI's, ``book/fastcache.py``).

A build checks the same derivation steps with sympy and draws the same figures with matplotlib
every time; both are pure functions of their inputs, so their results are kept on disk under a
hash of those inputs (``derivations.derivation`` keeps proved steps, ``book.figures`` the SVG).
The store lives where the fast CLI keeps its cache (``book.fast.cache_dir``):
``$CHALKBOARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/chalkboard``, else ``~/.cache/chalkboard``, in
``build/<namespace>/<version>/``. ``version`` names everything the stored results depend on
besides the key (library versions, the source of the code that computes them); older versions
are removed. ``CHALKBOARD_FAST=0`` (no shortcuts) or ``CHALKBOARD_CACHE=0`` turns it off.

**Trust.** What a cache holds is believed (a proved step counts as proved, a figure is copied into
the site, a number is printed), so only the user's own material is read:

- the cache root must be a folder the user owns that no one else can write (checked on every
  use; a root that fails is ignored with one ``note:`` line, see :func:`trusted_root`); every
  folder chalkboard makes in it is created 0700;
- every file is opened without following a symbolic link and without blocking (a FIFO, a
  device, a folder in a file's place is damage), and must be a regular file of the user's that
  others cannot write (:func:`read_private`);
- every entry is sealed with an HMAC-SHA256 under a per-user key (:func:`user_key`, 32 random
  bytes in ``.chalkboard-key``, mode 0600), over the entry's name and bytes, so an entry planted
  or edited by anyone without the key, or moved to another name, is damage, never an answer.

Safe by construction otherwise: a value is written to a temporary file and renamed (a reader sees
a whole entry or none), a damaged entry is a miss (the caller computes and the entry is
rewritten; one ``note:`` line says so), and a folder that cannot be written only costs speed.

>>> import tempfile
>>> store = Store("example", "v1", root=tempfile.mkdtemp())
>>> store.get("k") is None
True
>>> store.put("k", b"value")
>>> store.get("k")
b'value'
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
from pathlib import Path

FORMAT = b"chalkboard-store-2"  # a sealed entry's first line: FORMAT, then its HMAC
KEEP_VERSIONS = 4  # per namespace: older versions (of earlier sources) are removed
FOLDER = "build"  # under the cache root, beside the fast CLI's folders (book/fastcache.py)
KEY_FILE = ".chalkboard-key"  # the per-user HMAC key, in the cache root
KEY_BYTES = 32
MAX_ENTRY_BYTES = 64_000_000  # a bigger file is damage (never read whole)
NOTED: set[str] = set()  # notes already printed by this process (one line each)


class Untrusted(Exception):
    """A cache folder or file that is not the user's own, or that others can write."""


class Damaged(Exception):
    """A cache file that is not a whole, authentic entry (the next write replaces it)."""


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


# -- trust ----------------------------------------------------------------------------------


def check_folder(path: Path) -> None:
    """Untrusted unless ``path`` is a folder of the user's that no one else can write (a root
    that is a symbolic link is judged by its target)."""
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise Untrusted(f"{path} is not a folder")
    _check_owner(path, info)


def _check_owner(path, info) -> None:
    if info.st_uid != os.geteuid():
        raise Untrusted(f"{path} belongs to another user (uid {info.st_uid})")
    if info.st_mode & 0o022:
        raise Untrusted(f"others can write {path} (mode {stat.S_IMODE(info.st_mode):o})")


def trusted_root(root: Path | None = None, create: bool = False) -> Path:
    """The cache root (made 0700 when missing and ``create``), checked by :func:`check_folder`;
    Untrusted says why it may not be used, OSError that it does not exist or cannot be made."""
    root = cache_dir() if root is None else Path(root)
    if create:
        with contextlib.suppress(FileExistsError):
            root.mkdir(mode=0o700, parents=True)
    check_folder(root)
    return root


def make_folder(path: Path, root: Path) -> None:
    """Make ``path`` and each missing folder between it and ``root`` with mode 0700."""
    missing = []
    while path != root and not path.is_dir():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            if not folder.is_dir():  # a file (damage) where a folder belongs
                folder.unlink()
                folder.mkdir(mode=0o700)


def read_private(path: Path, limit: int = MAX_ENTRY_BYTES) -> bytes:
    """The bytes of ``path``: a regular file of the user's that others cannot write, of at most
    ``limit`` bytes, opened without following a link or blocking (FileNotFoundError when absent,
    Damaged otherwise)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:  # a symbolic link (ELOOP), a socket, no permission
        raise Damaged(f"{path} cannot be opened ({e.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Damaged(f"{path} is not a regular file")
        try:
            _check_owner(path, info)
        except Untrusted as e:
            raise Damaged(str(e)) from None
        if info.st_size > limit:
            raise Damaged(f"{path} is larger than {limit} bytes")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise Damaged(f"{path} is larger than {limit} bytes")
        return b"".join(chunks)
    except OSError as e:
        raise Damaged(f"{path} cannot be read ({e.strerror})") from None
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes, root: Path) -> None:
    """Write ``data`` to ``path`` (under ``root``) atomically, mode 0600, its folders 0700; a
    folder or anything else in the file's place is replaced."""
    import tempfile  # here, not at the top: book.fast reads cache_dir on every start

    make_folder(path.parent, root)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            os.replace(tmp, path)
        except IsADirectoryError:
            import shutil

            shutil.rmtree(path, ignore_errors=True)
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_KEYS: dict[tuple, bytes] = {}


def user_key(root: Path, create: bool = True) -> bytes:
    """The per-user HMAC key kept in ``root`` (32 random bytes, mode 0600): made when missing
    (or unreadable, or readable by others: then every entry sealed with the old one is damage)
    and ``create``; FileNotFoundError when missing and not ``create``."""
    path = Path(root) / KEY_FILE
    try:
        info = os.stat(path, follow_symlinks=False)
        known = (str(path), info.st_ino, info.st_mtime_ns, info.st_mode, info.st_uid)
        if known in _KEYS:
            return _KEYS[known]
        key = read_private(path, KEY_BYTES)
        if len(key) == KEY_BYTES and not info.st_mode & 0o077:
            _KEYS[known] = key
            return key
    except FileNotFoundError:
        if not create:
            raise
    except Damaged:
        pass
    if not create:
        raise FileNotFoundError(path)
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-key-")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(KEY_BYTES))
        try:
            os.link(tmp, path)  # two first runs at once: one key wins, both use it
        except FileExistsError:
            os.replace(tmp, path)  # it was damaged: replace it
    finally:
        Path(tmp).unlink(missing_ok=True)
    return user_key(root, create=False)


def seal(key: bytes, name: str, data: bytes) -> bytes:
    """``data`` under a first line holding FORMAT and its HMAC with ``name`` (see unseal)."""
    return FORMAT + b" " + _mac(key, name, data) + b"\n" + data


def unseal(key: bytes, name: str, blob: bytes) -> bytes:
    """The data :func:`seal` sealed under ``name`` with ``key``; Damaged when the HMAC does not
    match (edited, truncated, planted by someone without the key, or moved from another name)."""
    import hmac

    head, sep, data = blob.partition(b"\n")
    if not sep or not hmac.compare_digest(head, FORMAT + b" " + _mac(key, name, data)):
        raise Damaged(f"{name} does not carry this user's seal")
    return data


def _mac(key: bytes, name: str, data: bytes) -> bytes:
    import hmac

    mac = hmac.new(key, digestmod="sha256")
    encoded = name.encode("utf-8", "surrogateescape")
    mac.update(b"%d:" % len(encoded) + encoded)
    mac.update(data)
    return mac.hexdigest().encode("ascii")


def note(text: str, err=None) -> None:
    """Print ``note: text`` on stderr once per process (the same text is said once)."""
    if text in NOTED:
        return
    NOTED.add(text)
    stream = err or sys.stderr
    if stream is None:
        return
    try:
        stream.write(f"note: {text}\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def untrusted_note(why: str) -> str:
    """The note for a cache root that is not used."""
    return (
        f"ignored the chalkboard cache: {why}; this run computed everything itself (remove that "
        "folder, or set CHALKBOARD_CACHE_DIR to a folder of your own)"
    )


# -- the store ------------------------------------------------------------------------------


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

    def _trusted(self, create: bool) -> tuple[Path, bytes] | None:
        """The checked root and the user's key, or None (a note says why when untrusted)."""
        try:
            root = trusted_root(self.root, create=create)
            return root, user_key(root, create=create)
        except Untrusted as e:
            note(untrusted_note(str(e)))
        except OSError:
            pass
        return None

    def get(self, key: str) -> bytes | None:
        """The value stored under ``key``, or None (absent, damaged, or the store is off)."""
        if not enabled():
            return None
        trusted = self._trusted(create=False)
        if trusted is None:
            return None
        path, name = self._path(key)
        try:
            blob = read_private(path)
            if not blob.startswith(FORMAT + b" "):
                return None  # an entry of an earlier format: a plain miss
            return unseal(trusted[1], name, blob)
        except FileNotFoundError:
            return None
        except Damaged:
            note(
                f"a damaged entry of the build cache ({self.folder.parent.name}) was ignored "
                "and is computed again"
            )
            return None

    def put(self, key: str, value: bytes) -> None:
        """Store ``value`` under ``key``; a store that cannot be written is silently skipped."""
        if not enabled():
            return
        trusted = self._trusted(create=True)
        if trusted is None:
            return
        root, secret = trusted
        path, name = self._path(key)
        try:
            write_private(path, seal(secret, name, value), root)
            if not self._pruned:
                self._pruned = True
                _prune(self.folder.parent, keep=self.folder)
        except OSError:
            pass


def _prune(namespace: Path, keep: Path) -> None:
    """Remove all but the newest KEEP_VERSIONS version folders of a namespace."""
    os.utime(keep)  # the version in use is the newest
    folders = [p for p in namespace.iterdir() if p.is_dir()]
    folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in folders[KEEP_VERSIONS:]:
        if old != keep:
            import shutil

            shutil.rmtree(old, ignore_errors=True)
