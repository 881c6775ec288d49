"""A second core for the work a reader waits on: a computation split with a forked copy of this
process (:func:`halves`), or run in copies beside it (:func:`ahead` from now, :func:`beside`
from the point the work says it is :func:`ready`).

The copy (POSIX ``fork``) starts with every module, memo and argument of this process, so
nothing is imported or sent to it. It answers through a pipe (arrays in NumPy's own format, never
a pickle) or through the build's store (:mod:`book.resultcache`, whose lock makes this process
wait for a value the copy is computing), and it ends with ``os._exit``: none of this process's
cleanup (``finally`` blocks, exit handlers, buffered output, a staging folder's removal) runs in
it, and Ctrl-C or SIGTERM simply ends it. A copy that fails costs only its part, computed here
again. Each copy is waited for before its caller returns, so its CPU counts as this process's
children's (``time`` and ``make bench`` see it).

Used only where the wall time is what counts and it is safe: inside :func:`wanted` (``chalkboard
serve``'s page rebuilds, which a reader waits on; a build's goal is its CPU, which a copy only
adds to: it starts by copying pages of this process as it writes to them), where ``os.fork``
exists, this process may run on two CPUs or more, and it has one thread (a fork copies only the
calling thread: a lock another thread held would stay held in the copy forever).
``CHALKBOARD_FORK=0`` turns it off, ``CHALKBOARD_FORK=1`` on everywhere.

>>> import numpy as np
>>> squares = lambda part: (np.arange(10.0)[part] ** 2,)
>>> with wanted():
...     halves(squares, 10)[0].tolist() == [float(k * k) for k in range(10)]
True
>>> with wanted(), ahead(lambda: None):
...     pass
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import signal
import threading
from collections.abc import Callable

_WANTED = [False]  # inside wanted()


@contextlib.contextmanager
def wanted():
    """Inside this block, work is split with forked copies where it can be (see the module)."""
    before, _WANTED[0] = _WANTED[0], True
    try:
        yield
    finally:
        _WANTED[0] = before


def usable() -> bool:
    """True when a forked copy is wanted and can run beside this process safely (the module)."""
    chosen = os.environ.get("CHALKBOARD_FORK", "")
    if not hasattr(os, "fork") or chosen == "0" or not (_WANTED[0] or chosen == "1"):
        return False
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cpus or 1) > 1 and threading.active_count() == 1


def _fork(work: Callable[[], None]) -> int:
    """Start a copy of this process that runs ``work()`` and ends; its pid (here)."""
    gc.freeze()  # the objects so far: neither process's collector writes to their pages
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:  # the copy: whatever happens, it never returns into its parent's frames
        gc.disable()  # a short life: its garbage goes with it
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        from book import resultcache

        resultcache.release_inherited()  # the parent's store locks stay the parent's
        work()
        code = 0
    finally:
        os._exit(code)


def halves(compute: Callable[[slice], tuple], n: int) -> tuple:
    """``compute(slice(0, n))``, with the even items (``compute(slice(0, n, 2))``) computed here
    and the odd ones in a forked copy, each array's items put back in order along its first
    axis: for a ``compute`` whose arrays' item k depends on item k of its input alone (fits side
    by side, each on its own), the result is the same number for number. Alternate items share
    the work evenly where runs of alike items cost alike (a run of fits: its specs in blocks,
    the slower folds last). One process only when a copy cannot help."""
    import numpy as np

    if n < 2 or not usable():
        return compute(slice(0, n))
    even, odd = slice(0, n, 2), slice(1, n, 2)
    read, write = os.pipe()

    def odd_items() -> None:
        os.close(read)
        buffer = io.BytesIO()
        np.savez(buffer, *compute(odd))
        with os.fdopen(write, "wb") as pipe:
            pipe.write(buffer.getvalue())

    pid = _fork(odd_items)
    os.close(write)
    try:
        first = compute(even)
        with os.fdopen(read, "rb") as pipe:
            data = pipe.read()
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(read)
        os.kill(pid, signal.SIGKILL)
        _wait(pid)
        raise
    _, status = _wait(pid)
    second = None
    if status == 0:
        failed = (ValueError, OSError, EOFError, KeyError)
        with contextlib.suppress(*failed), np.load(io.BytesIO(data), allow_pickle=False) as got:
            second = tuple(got[f"arr_{k}"] for k in range(len(first)))
    if second is None:  # the copy failed: its items computed here
        second = compute(odd)
    out = []
    for a, b in zip(first, second, strict=True):
        both = np.empty((n, *a.shape[1:]), dtype=np.result_type(a, b))
        both[even], both[odd] = a, b
        out.append(both)
    return tuple(out)


@contextlib.contextmanager
def ahead(*computations: Callable[[], object]):
    """Run ``computations``, one after another, in a forked copy while the block runs here, for
    what they leave in the build's store (:mod:`book.resultcache`): the block then finds those
    values there, waiting on the store's lock while the copy is still computing one, instead of
    computing them. The copy is waited for when the block ends. Nothing is forked when the store
    is off (the copy's values would be lost) or a copy cannot help."""
    pid = _start(computations)
    try:
        yield
    finally:
        if pid is not None:
            _wait(pid)


def _start(computations) -> int | None:
    """A copy running ``computations`` one after another, or None where none is worth it."""
    from units import diskcache

    if not computations or not diskcache.enabled() or not usable():
        return None

    def work() -> None:
        for compute in computations:
            compute()

    return _fork(work)


_WAITING: list[tuple[list, list]] = []  # each beside() block's computations not started, copies


@contextlib.contextmanager
def beside(*computations: Callable[[], object]):
    """``ahead`` for each of ``computations``, in a copy each, started when the block calls
    :func:`ready` (from that point, what they share with the block is found or waited for in
    the store) or else when it ends; the copies are waited for at its end."""
    block: tuple[list, list] = (list(computations), [])
    _WAITING.append(block)
    try:
        yield
        _start_each(block)  # this block's own, not ready() yet: now
    finally:
        _WAITING.remove(block)
        for pid in block[1]:
            _wait(pid)


def ready() -> None:
    """Start the computations waiting in the :func:`beside` blocks under way, a copy each."""
    for block in _WAITING:
        _start_each(block)


def _start_each(block: tuple[list, list]) -> None:
    waiting, started = block
    while waiting:
        pid = _start([waiting.pop(0)])
        if pid is not None:
            started.append(pid)


def _wait(pid: int) -> tuple[int, int]:
    """Wait for the copy ``pid``; the objects frozen for it collectable again."""
    try:
        return os.waitpid(pid, 0)
    finally:
        gc.unfreeze()
