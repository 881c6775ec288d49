"""units/diskcache.py: the build's content-addressed store on disk."""

import os

import pytest

from units import diskcache
from units.diskcache import Store


@pytest.fixture
def root(empty_cache):
    return empty_cache  # tests/conftest.py


def _entries(root):
    return [p for p in (root / diskcache.FOLDER).rglob("*") if p.is_file()]


def test_a_value_comes_back_under_its_key_only(root):
    store = Store("ns", "v1")
    assert store.get("a") is None
    store.put("a", b"one\ntwo")
    assert store.get("a") == b"one\ntwo" and store.get("b") is None
    assert Store("ns", "v2").get("a") is None  # another version (other sources) never reads it
    assert Store("other", "v1").get("a") is None
    (entry,) = _entries(root)
    assert entry.is_relative_to(root / "build" / "ns" / "v1")


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1],  # truncated
        lambda data: data + b"x",  # grown
        lambda data: data.replace(b"one", b"two"),  # the value changed
        lambda data: b"",  # empty
        lambda data: b"\xff\xfe not ours",  # not an entry at all
    ],
)
def test_a_damaged_entry_is_a_miss_and_is_rewritten(root, damage):
    store = Store("ns", "v1")
    store.put("a", b"one")
    (entry,) = _entries(root)
    entry.write_bytes(damage(entry.read_bytes()))
    assert store.get("a") is None
    store.put("a", b"one")
    assert store.get("a") == b"one"


def test_an_entry_copied_under_another_key_is_a_miss(root):
    """An entry vouches for its own key: one moved to another key's place is not read there."""
    store = Store("ns", "v1")
    store.put("a", b"proved")
    store.put("b", b"other")
    path_a, _ = store._path("a")
    path_b, _ = store._path("b")
    path_b.write_bytes(path_a.read_bytes())
    assert store.get("b") is None and store.get("a") == b"proved"


@pytest.mark.parametrize("variable", ["CHALKBOARD_FAST", "CHALKBOARD_CACHE"])
def test_a_disabled_store_reads_and_writes_nothing(root, monkeypatch, variable):
    store = Store("ns", "v1")
    store.put("a", b"one")
    monkeypatch.setenv(variable, "0")
    assert store.get("a") is None
    store.put("b", b"two")
    monkeypatch.delenv(variable)
    assert store.get("b") is None and store.get("a") == b"one"


def test_an_unwritable_store_only_costs_speed(monkeypatch):
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", "/dev/null/chalkboard")
    store = Store("ns", "v1")
    store.put("a", b"one")  # no error
    assert store.get("a") is None


def test_old_versions_are_removed(root):
    for n in range(diskcache.KEEP_VERSIONS + 3):
        version = root / "build" / "ns" / f"old{n}"
        version.mkdir(parents=True)
        os.utime(version, (n, n))  # older first
    Store("ns", "new").put("a", b"one")
    left = sorted(p.name for p in (root / "build" / "ns").iterdir())
    # with "new", the newest KEEP_VERSIONS
    kept = [f"old{n}" for n in range(4, diskcache.KEEP_VERSIONS + 3)]
    assert left == sorted(["new", *kept])


def test_the_fast_clis_pruning_keeps_the_build_caches(root):
    """book/fastcache.py keeps its newest few folders in the same root; the build's folder is
    not one of them."""
    from book import fastcache

    Store("ns", "v1").put("a", b"one")
    for n in range(fastcache.KEEP_CACHES + 2):
        (root / f"key{n}").mkdir()
    fastcache._prune(root, keep=root / "key0")
    assert Store("ns", "v1").get("a") == b"one"


def test_the_root_is_the_fast_clis(root, monkeypatch):
    from book import fast

    assert diskcache.cache_dir() == fast.cache_dir() == root
    monkeypatch.delenv("CHALKBOARD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "xdg"))
    assert diskcache.cache_dir() == fast.cache_dir() == root / "xdg" / "chalkboard"
