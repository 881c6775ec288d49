"""Results of a build's slow, pure steps kept across builds, as JSON data under a hash of inputs.

A warm build repeats work whose inputs did not change: the prediction's leave-one-out fits, the
tutorial's code blocks, the figures (``book.figures.remembered_figure``, under the code
:func:`code_closure` finds). Each is kept in the build's store (``units.diskcache``: the user's own
folder, every entry sealed with the user's HMAC key, a damaged or tampered entry a miss that is
computed again) under a digest of everything it is made from: the source of the library
(``derivations/``, ``units/`` with its preset data), the preset files used, any ``--extra``
module, the versions of the numeric libraries, and the sources the caller names. Values are JSON
(numbers, strings, lists, dicts): never code, never a pickle.

>>> import os, tempfile
>>> before = os.environ.get("CHALKBOARD_CACHE_DIR")
>>> os.environ["CHALKBOARD_CACHE_DIR"] = tempfile.mkdtemp()
>>> calls = []
>>> def square():
...     calls.append(1)
...     return {"x": 3.0**2}
>>> remembered("example", ("book/format.py",), ("three",), square)
{'x': 9.0}
>>> remembered("example", ("book/format.py",), ("three",), square), len(calls)
({'x': 9.0}, 1)
>>> _ = os.environ.pop("CHALKBOARD_CACHE_DIR") if before is None else os.environ.update(
...     CHALKBOARD_CACHE_DIR=before
... )
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

from units import diskcache, reads

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("derivations", "units")  # the floors every computed number comes from


@cache
def _library_digest() -> str:
    """The library's source and data files and the numeric libraries' versions (this process's
    files do not change under it: a build is one process)."""
    import numpy
    import pint
    import sympy

    files = sorted(
        p
        for folder in LIBRARY
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    versions = (platform.python_version(), numpy.__version__, sympy.__version__)
    return diskcache.digest(
        *versions, pint.__version__,
        *(part for p in files for part in (p.relative_to(ROOT).as_posix(), p.read_bytes())),
    )  # fmt: skip


@cache
def code_closure(source: str) -> tuple[str, ...]:
    """The project's files ``source`` (a path relative to the project) reads: itself, every module
    of the book it imports (anywhere in it, a function's own imports too), theirs in turn, and
    each data file beside one of them whose name it spells (``"claims.toml"``). The library's own
    files are in every digest already. Found once per process (an edit of Python starts a new
    one, see ``book.serve``).

    >>> closure = code_closure("book/figures.py")
    >>> "book/chapters/batching.py" in closure and "book/claims.toml" in closure
    True
    >>> "book/cards.py" in closure  # figures never import the cards
    False
    """
    found, todo = set(), [ROOT / source]
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found.add(path)
        text = path.read_text(encoding="utf-8")
        for module, names in IMPORT.findall(text):
            for name in (module, *(f"{module}.{n}" for n in re.findall(r"\w+", names))):
                parts = name.split(".")
                for depth in range(1, len(parts) + 1):
                    module = ROOT.joinpath(*parts[:depth])
                    todo += filter(
                        Path.is_file, (module / "__init__.py", module.with_suffix(".py"))
                    )
        for name in DATA_NAME.findall(text):
            if (path.parent / name).is_file():
                found.add(path.parent / name)
    return tuple(sorted(p.relative_to(ROOT).as_posix() for p in found))


# ``import book.x`` or ``from book.x import a, b`` (or ``(a, b)`` over lines), at any indent
IMPORT = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(book(?:\.\w+)*)(?:[ \t]+import[ \t]+(\([^)]*\)|[^\n]*))?", re.M
)
DATA_NAME = re.compile(r"[\"']([\w.-]+\.(?:toml|json|csv|txt|md))[\"']")  # a data file named beside


def inputs_digest(sources: tuple[str, ...] = (), presets_files: tuple[str, ...] = ()) -> str:
    """A digest of the library, the ``sources`` (paths relative to the project), the preset
    files' bytes and every ``--extra`` module loaded in this process."""
    extras = sorted(
        m.__file__
        for name, m in list(sys.modules.items())
        if name.startswith("chalkboard_extra_") and getattr(m, "__file__", None)
    )
    parts = [_library_digest()]
    for path in (*(ROOT / s for s in sources), *map(Path, presets_files), *map(Path, extras)):
        parts += [_named(path), path.read_bytes() if path.is_file() else b"(missing)"]
    return diskcache.digest(*parts)


def _named(path: Path) -> str:
    """A file as a digest names it: relative to the project when inside it (as the library's
    files are named), so that a copy of the project (``chalkboard serve``'s, a second checkout)
    finds what this one computed from the same bytes; else its whole path."""
    try:
        return "project:" + path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def remembered(
    namespace: str,
    sources: tuple[str, ...],
    key: tuple[str, ...],
    compute: Callable[[], object],
    presets_files: tuple[str, ...] = (),
):
    """``compute()`` (a JSON value), or what it returned before for the same inputs: the same
    ``key`` and ``sources`` on the same library, and the same values of the presets it read
    (``units.reads``; of the preset files ``presets_files``): an edit of a preset it did not read
    finds it still. The reads of its last computations are kept under the key; each value under
    the values its reads find now (all the preset files' bytes when it read what cannot be
    named). An entry that is not valid JSON of the user's seal is computed again and replaced;
    a hit notes its reads as if computed here."""
    base = inputs_digest(sources)
    name = diskcache.digest(*key)
    traces = diskcache.Store(f"{namespace}-reads", base[:32])
    store = diskcache.Store(namespace, base[:32])  # one version per sources: entries by reads
    found = _stored(store, traces, name, presets_files)
    if found is not None:
        return found
    with _one_at_a_time(store, name):  # another process computing it: wait, then read its value
        found = _stored(store, traces, name, presets_files)
        if found is not None:
            return found
        return _computed(store, traces, name, compute, presets_files)


def _stored(store, traces, name: str, presets_files: tuple[str, ...]):
    """The value stored under ``name`` for what its reads find now (noting those reads), or
    None. Each trace kept for ``name`` is tried, the latest first: the reads one computation
    records depend on what was cached around it (a preset edit put back finds the value of the
    build before it, whose reads were recorded in another order)."""
    for trace in _traces(traces, name):
        found = _json(store.get(_version(name, trace, presets_files)))
        if found is not None:
            reads.note_all(trace)
            return found
    return None


TRACES_KEPT = 8  # traces kept per key: the reads of its last computations, the latest first


def _traces(traces, name: str) -> list[list[tuple]]:
    """The traces kept for ``name`` (an entry of one trace, as stored before, is a list of one)."""
    kept = _json(traces.get(name))
    if not isinstance(kept, list):
        return []
    if all(isinstance(item, list) and item and isinstance(item[0], str) for item in kept):
        kept = [kept]  # one trace of (kind, id[, field]) reads
    return [
        [tuple(item) for item in trace]
        for trace in kept
        if isinstance(trace, list) and all(isinstance(item, list) for item in trace)
    ]


@contextlib.contextmanager
def _one_at_a_time(store, name: str):
    """Hold a lock on ``name`` of ``store`` (a file in the cache's ``locks`` folder) while
    computing it, so that processes sharing a cache (a build beside ``serve``'s, the workers of
    a test session and its build) compute it once: the others wait, then read the stored value.
    An exclusive ``flock`` on a file opened here (so threads exclude each other too), released
    when the file is closed or the process ends however it ends; a store that is off or a lock
    that cannot be taken only costs the waiting."""
    handle = None
    if diskcache.enabled():
        with contextlib.suppress(OSError, diskcache.Untrusted):
            root = diskcache.trusted_root(store.root, create=True)
            folder = root / diskcache.FOLDER / "locks"  # beside the stores, not among entries
            diskcache.make_folder(folder, root)
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
            handle = os.open(folder / f"{store.namespace}-{name[:32]}", flags, 0o600)
            _HELD.add(handle)
            fcntl.flock(handle, fcntl.LOCK_EX)
    try:
        yield
    finally:
        if handle is not None:
            _HELD.discard(handle)
            os.close(handle)  # releases the lock


_HELD: set[int] = set()  # the lock files this process has open


def release_inherited() -> None:
    """In a forked copy (``book.parallel``): close the lock files the parent had open, so that
    each lock is freed when the parent closes its own (a lock lives while any copy of its file
    stays open), never held on by the copy."""
    for handle in _HELD:
        with contextlib.suppress(OSError):
            os.close(handle)
    _HELD.clear()


def _computed(store, traces, name: str, compute, presets_files: tuple[str, ...]):
    with reads.recording() as got:
        value = compute()
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        return value  # not plain data (a caller's change): used, never stored
    trace = sorted(got)
    store.put(_version(name, trace, presets_files), text.encode("utf-8"))
    kept = [trace, *(t for t in _traces(traces, name) if t != trace)][:TRACES_KEPT]
    traces.put(name, json.dumps(kept).encode("utf-8"))
    return value


def _json(data: bytes | None):
    """The JSON value of a stored entry; None when absent or unreadable (an older format)."""
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError:
        return None


def _version(name: str, trace: list, presets_files: tuple[str, ...]) -> str:
    """The name a value is stored under: its key's (``name``) with what each read of ``trace``
    finds in the preset files now, or the files' bytes when a read cannot be named."""
    from units.presets import _load, read_value

    if not presets_files:
        return name
    if (reads.ALL, reads.ALL) in trace:
        return diskcache.digest(name, inputs_digest((), presets_files))
    presets = _load(tuple(map(str, presets_files)))
    kept = _READ_VALUES.get(id(presets))
    if kept is None or kept[0] is not presets:  # the values of one load, kept with it
        kept = _READ_VALUES[id(presets)] = (presets, {})
    seen = kept[1]
    found = []
    for item in trace:
        if item not in seen:
            seen[item] = read_value(presets, item)
        found += [repr(item), seen[item]]
    return diskcache.digest(name, *found)


_READ_VALUES: dict[int, tuple] = {}  # by load of the presets: what each read finds there
