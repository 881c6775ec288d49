"""Which presets a computation read, recorded so that ``chalkboard serve`` computes again, after a
preset edit, only what read an edited preset.

A read is ``(kind, id)`` for one preset looked up (or asked for and absent), ``(kind, ALL)``
for the ids of a kind listed or counted (which presets there are), and ``(kind, id, field)`` for
one field of a preset read (``(kind, id, "source:" + field)`` for its source). A preset reached
while listing a kind is read by id too (``values()`` and ``items()`` read every one): an "every
chip" table reads each chip and its figures it shows, and the list of chips, which a chip added or
removed changes.
Each kind of a loaded :class:`units.presets.Presets` notes its reads into every recording under
way (recordings nest: the outer ones get the inner ones' reads too). A cache that keeps results
computed from presets (:class:`ReadsDict`, :func:`cached`) keeps their reads beside them and notes
them again on every hit, so a computation's reads are whole whether it computed its parts or found
them; an entry stored outside any recording read, as far as anyone knows, everything.

>>> from units.presets import load
>>> presets = load()
>>> with recording() as got:
...     _ = presets.get("hardware", "h100_sxm").hbm_bandwidth
...     _ = len(presets.precision)
>>> sorted(got)
[('hardware', 'h100_sxm'), ('hardware', 'h100_sxm', 'hbm_bandwidth'), ('precision', '*')]
>>> touches(got, {("hardware", "h100_sxm", "hbm_bandwidth")})
True
>>> touches(got, {("hardware", "h100_sxm", "hbm_capacity")})  # a figure it did not read
False
>>> touches(got, {("precision", "fp4")})  # its ids were counted, not its figures
False
>>> touches(got, {("precision", "fp4"), ("precision", ALL)})  # fp4 added or removed
True
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Callable, Iterable

ALL = "*"
UNKNOWN = frozenset({(ALL, ALL)})  # what an entry stored outside any recording read
_FRAMES: list[set] = []  # the recordings under way, innermost last
_STARTS: list[Callable[[], None]] = []  # run as a recording starts (memos that skip reads)
_CACHES: list[weakref.ref] = []  # every ReadsDict, weakly


def note(kind: str, preset_id: str, field: str | None = None) -> None:
    """One read, into every recording under way: a preset (that it is there), or its field."""
    item = (kind, preset_id) if field is None else (kind, preset_id, field)
    for frame in _FRAMES:
        frame.add(item)


def note_all(reads: Iterable) -> None:
    for frame in _FRAMES:
        frame.update(reads)


def on_recording(clear: Callable[[], None]) -> None:
    """Run ``clear`` whenever a recording starts: a memo of values read from presets that would
    answer without reading them again (``derivations.inputs``' reads by choice of presets)
    must not answer across recordings."""
    if clear not in _STARTS:
        _STARTS.append(clear)


@contextlib.contextmanager
def recording(quiet: bool = False):
    """A set that receives every read made inside the block (``quiet``: without running the
    :func:`on_recording` hooks, for a memo's own recording)."""
    frame: set = set()
    for clear in () if quiet else _STARTS:
        clear()
    _FRAMES.append(frame)
    try:
        yield frame
    finally:
        _FRAMES.pop()


@contextlib.contextmanager
def unrecorded():
    """A block whose reads are nobody's (loading and checking the presets themselves)."""
    saved = _FRAMES[:]
    _FRAMES.clear()
    try:
        yield
    finally:
        _FRAMES[:] = saved


def touches(reads, changed) -> bool:
    """Whether ``reads`` include one of ``changed``: ``(kind, id, field)`` for a field edited
    (with ``(kind, id, ALL)`` when one is added or removed), ``(kind, id)`` and ``(kind, ALL)``
    for a preset added or removed."""
    if (ALL, ALL) in reads or (ALL, ALL) in changed:
        return True
    return any(item in reads for item in changed)


class ReadsDict(dict):
    """A cache of results computed from presets: each entry keeps the reads of the innermost
    recording at the moment it is stored (they include the computation's own), noted again when
    it is read; :func:`forget` drops the entries that read a changed preset."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads: dict = dict.fromkeys(self, UNKNOWN)
        _CACHES.append(weakref.ref(self))

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.reads[key] = frozenset(_FRAMES[-1]) if _FRAMES else UNKNOWN

    def __getitem__(self, key):
        value = super().__getitem__(key)
        if _FRAMES:
            note_all(self.reads.get(key, UNKNOWN))
        return value

    def get(self, key, default=None):
        return self[key] if key in self else default  # noqa: SIM401 - a hit notes its reads

    def __delitem__(self, key) -> None:
        super().__delitem__(key)
        self.reads.pop(key, None)

    def pop(self, key, *default):
        self.reads.pop(key, None)
        return super().pop(key, *default)

    def clear(self) -> None:
        super().clear()
        self.reads.clear()

    def forget(self, changed) -> None:
        for key in [k for k, r in self.reads.items() if touches(r, changed)]:
            del self[key]


def cached(fn):
    """``functools.cache`` for a function that reads presets: each result keeps its own reads."""
    store = ReadsDict()

    @functools.wraps(fn)
    def wrapper(*args):
        if args in store:
            return store[args]
        with recording():
            value = store[args] = fn(*args)
        return value

    wrapper.cache_clear = store.clear
    return wrapper


def forget_all() -> None:
    """Drop every cached result that read presets."""
    forget({(ALL, ALL)})


def forget(changed) -> None:
    """Drop every cached result that read one of ``changed`` (``(kind, id)`` pairs)."""
    _CACHES[:] = [ref for ref in _CACHES if ref() is not None]
    for ref in list(_CACHES):
        cache = ref()
        if cache is not None:
            cache.forget(changed)
