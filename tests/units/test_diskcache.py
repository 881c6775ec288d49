"""units/diskcache.py: the build's content-addressed store on disk."""

import os

import pytest

from tests.damage import put_damage
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


# -- trust: only the user's own, sealed entries are read ------------------------------------------


def _forged(root, key: str, value: bytes) -> None:
    """An entry for ``key`` written by someone without the user's key: sealed with their own."""
    store = Store("ns", "v1")
    path, name = store._path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    if hasattr(diskcache, "seal"):
        path.write_bytes(diskcache.seal(b"another user's key 32 bytes long", name, value))
    else:  # the unkeyed digest of the store before the seal: anyone could compute it
        path.write_bytes(diskcache._header(name, value) + b"\n" + value)


def test_an_entry_planted_without_the_users_key_is_never_read(root, capsys):
    diskcache.NOTED.clear()  # a note is said once per process
    Store("ns", "v1").put("a", b"one")  # the user's key exists
    _forged(root, "step", b"proved")
    assert Store("ns", "v1").get("step") is None
    assert "note: a damaged entry of the build cache (ns)" in capsys.readouterr().err
    Store("ns", "v1").put("step", b"proved")
    assert Store("ns", "v1").get("step") == b"proved"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_root_owned_by_another_user_is_ignored_with_one_note(root, capsys):
    diskcache.NOTED.clear()
    Store("ns", "v1").put("step", b"proved")  # theirs now, with their key and seal
    for path in [root, *root.rglob("*")]:
        os.chown(path, 65534, 65534, follow_symlinks=False)
    for _ in range(3):
        assert Store("ns", "v1").get("step") is None
    Store("ns", "v1").put("other", b"x")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{root} belongs to another user (uid 65534)" in err
    assert not [p for p in root.rglob("*") if p.stat().st_uid != 65534]  # nothing written


def test_a_root_others_can_write_is_ignored(root, capsys):
    diskcache.NOTED.clear()
    Store("ns", "v1").put("step", b"proved")
    root.chmod(0o777)
    assert Store("ns", "v1").get("step") is None
    assert f"others can write {root} (mode 777)" in capsys.readouterr().err
    root.chmod(0o700)
    assert Store("ns", "v1").get("step") == b"proved"


@pytest.mark.parametrize("kind", ["folder", "fifo", "symlink to /dev/zero", "others can write"])
def test_a_damaged_entry_never_blocks_and_is_replaced(root, kind, capsys):
    diskcache.NOTED.clear()
    store = Store("ns", "v1")
    store.put("a", b"one")
    path, _ = store._path("a")
    put_damage(path, {"symlink to /dev/zero": "dev-zero", "others can write": b""}.get(kind, kind))
    if kind == "others can write":
        path.chmod(0o666)
    assert store.get("a") is None  # at once: a FIFO is never read, /dev/zero never followed
    assert "damaged" in capsys.readouterr().err
    store.put("a", b"one")
    assert store.get("a") == b"one" and path.is_file() and not path.is_symlink()


def test_folders_are_made_0700_and_entries_0600(tmp_path, monkeypatch):
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(tmp_path / "new" / "cache"))
    Store("ns", "v1").put("a", b"one")
    root = tmp_path / "new" / "cache"
    for path in [root, *root.rglob("*")]:
        want = 0o700 if path.is_dir() else 0o600
        assert path.stat().st_mode & 0o777 == want, path


def test_a_key_others_can_read_is_replaced(root):
    Store("ns", "v1").put("a", b"one")
    key = root / diskcache.KEY_FILE
    old = key.read_bytes()
    key.chmod(0o644)
    assert Store("ns", "v1").get("a") is None  # sealed with a key others may have read
    Store("ns", "v1").put("a", b"one")
    assert key.read_bytes() != old and key.stat().st_mode & 0o777 == 0o600
    assert Store("ns", "v1").get("a") == b"one"
