"""book.parallel: work split with a forked copy gives what one process gives, a copy never runs
its parent's cleanup, a failed copy costs only its part, and nothing forks where it should not."""

from __future__ import annotations

import fcntl
import os
import signal
import threading
import time

import numpy as np
import pytest

from book import parallel, resultcache


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CHALKBOARD_FORK", raising=False)
    return tmp_path


def _pids(part: slice, n: int):
    """Item k's own value and the process that computed it."""
    k = np.arange(n)[part]
    return np.sqrt(k + 0.5), np.full(len(k), os.getpid())


def test_halves_join_the_two_processes_parts_in_order(store):
    with parallel.wanted():
        values, pids = parallel.halves(lambda part: _pids(part, 9), 9)
    assert values.tobytes() == np.sqrt(np.arange(9) + 0.5).tobytes()
    # the even items here, the odd ones in one other process
    assert set(pids[0::2]) == {os.getpid()} and len(set(pids[1::2])) == 1
    assert pids[1] != os.getpid()


def test_nothing_forks_outside_wanted_with_threads_or_when_turned_off(store, monkeypatch):
    def one_process(n=8):
        return set(parallel.halves(lambda part: _pids(part, n), n)[1]) == {os.getpid()}

    assert one_process()  # a build: its CPU is the goal
    with parallel.wanted():
        assert not one_process()
        monkeypatch.setenv("CHALKBOARD_FORK", "0")
        assert one_process()
        monkeypatch.delenv("CHALKBOARD_FORK")
        stop = threading.Event()
        other = threading.Thread(target=stop.wait)
        other.start()
        try:
            assert one_process()  # a second thread: no fork
        finally:
            stop.set()
            other.join()
    monkeypatch.setenv("CHALKBOARD_FORK", "1")
    assert not one_process()


def test_a_copy_that_dies_costs_only_its_part(store):
    parent = os.getpid()

    def dies_in_the_copy(part: slice):
        if os.getpid() != parent:
            os._exit(3)
        return _pids(part, 10)

    with parallel.wanted():
        values, pids = parallel.halves(dies_in_the_copy, 10)
    assert values.tobytes() == np.sqrt(np.arange(10) + 0.5).tobytes()
    assert set(pids) == {parent}


def test_an_error_here_ends_the_copy_and_leaves_no_child(store, monkeypatch):
    parent = os.getpid()
    forked = []
    fork = parallel._fork
    monkeypatch.setattr(parallel, "_fork", lambda work: forked.append(fork(work)) or forked[-1])

    def fails_here(part: slice):
        if os.getpid() == parent:
            raise ValueError("here")
        time.sleep(30)  # the copy would run on: it is ended, not waited for
        return _pids(part, 6)

    start = time.monotonic()
    with parallel.wanted(), pytest.raises(ValueError, match="here"):
        parallel.halves(fails_here, 6)
    assert time.monotonic() - start < 10
    assert len(forked) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(forked[0], os.WNOHANG)  # ended and waited for: not even a zombie left


def test_a_copy_never_runs_its_parents_cleanup(store):
    cleaned = store / "cleaned"

    def fails():
        raise RuntimeError("in the copy")

    try:
        with parallel.wanted(), parallel.ahead(fails, fails):
            pass
    finally:
        with open(cleaned, "a") as f:  # a staging folder's removal, say
            f.write(f"{os.getpid()}\n")
    assert cleaned.read_text() == f"{os.getpid()}\n"


def test_a_value_made_ahead_is_read_here_not_computed_again(store):
    calls = store / "calls"

    def slow_square():
        with open(calls, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(0.3)  # still computing when this process asks: it waits on the lock
        return {"x": 3.0**2}

    def square():
        return resultcache.remembered("parallel-test", ("book/parallel.py",), ("x",), slow_square)

    resultcache.inputs_digest(("book/parallel.py",))  # the library's digest, once for both
    with parallel.wanted(), parallel.ahead(square):
        while not calls.exists():  # the copy computes it, holding the store's lock
            time.sleep(0.01)
        assert square() == {"x": 9.0}
    made = calls.read_text().split()
    assert len(made) == 1 and made[0] != str(os.getpid())


def test_nothing_is_made_ahead_when_the_store_is_off(store, monkeypatch):
    monkeypatch.setenv("CHALKBOARD_CACHE", "0")
    calls = store / "calls"
    with parallel.wanted(), parallel.ahead(lambda: calls.write_text("copy")):
        pass
    assert not calls.exists()  # its value would be lost: not worth a copy


def test_a_copy_does_not_hold_on_to_its_parents_store_lock(store):
    """The parent forks while it holds a store lock (a fit split inside the prediction): the
    lock is free once the parent lets go, while the copy still runs."""
    store_ = resultcache.diskcache.Store("parallel-test", "0" * 32)
    started, tell = os.pipe()
    with resultcache._one_at_a_time(store_, "f" * 64):
        pid = parallel._fork(lambda: (os.write(tell, b"1"), time.sleep(30)))
    assert os.read(started, 1) == b"1"  # the copy runs its work (and sleeps on)
    lock = next((store / "cache").rglob("locks/parallel-test-*"))
    handle = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the copy still held it
    finally:
        os.close(handle)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def test_beside_starts_each_computation_in_a_copy_of_its_own_when_ready(store):
    """Each computation in a copy of its own, started at ready() (not before), and waited for
    when the block ends; without ready(), at the block's end."""
    marks = store / "marks"

    def mark(name):
        return lambda: marks.open("a").write(f"{name} {os.getpid()}\n")

    with parallel.wanted():
        with parallel.beside(mark("a"), mark("b")):
            time.sleep(0.2)
            assert not marks.exists()  # nothing started before ready()
            parallel.ready()
            parallel.ready()  # started once
        made = dict(line.split() for line in marks.read_text().splitlines())
        assert sorted(made) == ["a", "b"] and len(set(made.values()) | {str(os.getpid())}) == 3
        marks.unlink()
        with parallel.beside(mark("c")):
            with parallel.beside(mark("d")):
                pass
            assert marks.read_text().split()[0] == "d"  # an inner block's end starts its own
        assert [line.split()[0] for line in marks.read_text().splitlines()] == ["d", "c"]
