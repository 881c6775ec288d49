"""The fast CLI (book/fast.py, book/fastcache.py): the same bytes as the full library, a cache
that can go stale, be damaged or be unwritable without harm, and no sympy, pint or numpy."""

import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from book import fast
from book.cli import main, make_parser
from derivations import CATALOGUE
from tests.damage import put_damage
from units import diskcache

PAIRS = [("h100_sxm", "deepseek_v3"), ("b200", "llama_3_1_70b"), ("gb200_nvl72", "kimi_k2")]
CHOICES = ["--api", "claude_opus_4_6", "--tier", "flash_nvme", "--fit", "epoch_2024"]


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    """One cache folder for this module (compiling it once is the slow part)."""
    if not hasattr(cache, "folder"):
        cache.folder = tmp_path_factory.mktemp("fast-cache")
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(cache.folder))
    monkeypatch.delenv("CHALKBOARD_PRESETS", raising=False)
    return cache.folder


def run(argv, use_fast):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err, fast=use_fast)
    return code, out.getvalue(), err.getvalue()


@functools.cache
def parser():
    """The whole parser, built once (argparse parses any number of command lines alike)."""
    return make_parser()


def answered_fast(argv) -> str | None:
    """The fast path's own answer (None when it hands the command to the full library)."""
    return fast.run(parser().parse_args(list(argv)))[0]


def run_fast(argv) -> tuple[tuple, bool]:
    """``run(argv, True)`` and whether the fast path answered it (then nothing was compiled or
    written: ``main`` printed the fast path's text and returned)."""
    answers, real = [], fast.run

    def recorded(args):
        got = real(args)
        answers.append(got[0])
        return got

    fast.run = recorded
    try:
        return run(argv, True), bool(answers) and answers[-1] is not None
    finally:
        fast.run = real


def same(argv, full=None) -> bool:
    """Full and fast runs print the same bytes and exit alike; True when the fast path itself
    answered (after one run that compiles what it lacked). ``full``: the full path's
    ``run(argv, False)`` when the caller already has it."""
    full = run(argv, False) if full is None else full
    first, answered = run_fast(argv)
    # a run the fast path answered changed nothing: running it again would be the same run
    again, answered = (first, answered) if answered else run_fast(argv)
    assert again[:2] == full[:2], (argv, full, again)
    # the fast path's own answer after those runs: ``again``'s, when it answered (then main
    # printed that answer and nothing else, so it is again[1]); else ask it once more
    answer = again[1] if answered else answered_fast(argv)
    assert answer is None or answer == full[1], argv
    return answer is not None


def test_every_catalogued_equation_prints_the_same_bytes_on_both_paths():
    answered = total = 0
    for eq_id in CATALOGUE:
        for hardware, model in PAIRS[:2]:
            base = ["eval", eq_id, "--hardware", hardware, "--model", model, *CHOICES]
            batched = run([*base, "--set", "batch_size=256"], False)
            if batched[0] == 0:
                base += ["--set", "batch_size=256"]
            for extra in ([], ["--json"]):
                argv = [*base, *extra]
                # the full path's run of argv, once: the batched probe is that run when it is one
                full = batched if batched[0] == 0 and not extra else run(argv, False)
                total += 1
                answered += same(argv, full) and full[0] == 0
    # everything that evaluates is answered fast (a few give 0, which the full path judges)
    assert answered > 0.7 * total, (answered, total)


@pytest.mark.parametrize(
    "argv",
    [
        ["list"],
        ["list", "--json"],
        ["list", "--chapter", "moe"],
        ["list", "--chapter", "long_context", "--json"],
        ["presets"],
        ["presets", "--json"],
        ["presets", "models"],
        ["presets", "hardware", "--sources"],
        ["presets", "prices", "--json"],
    ],
)
def test_list_and_presets_print_the_same_bytes(argv):
    assert same(argv)


H100 = ["--hardware", "h100_sxm", "--model", "deepseek_v3"]


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "crossover_batch", *H100, "--set", "mem_bandwidth=4.8 TB/s"],
        ["eval", "crossover_batch", *H100, "--set", "mem_bandwidth=4.8e12 B/s", "--json"],
        ["eval", "crossover_batch", *H100, "--set", "mem_bandwidth=4800 GB / s"],  # pint reads it
        ["eval", "cost_per_token", *H100, "--set", "batch_size=64", "--unit", "USD/Mtoken"],
        ["eval", "cost_per_token", *H100, "--set", "batch_size=64", "--set", "step_time=20 ms"],
        ["eval", "cost_per_token", *H100, "--set", "batch_size=64 users"],  # the reader's words
        ["eval", "cost_per_token", *H100, "--set", "batch_size=64 sequences per step"],  # a count
        [
            "eval",
            "step_time",
            "--hardware",
            "b200",
            "--model",
            "deepseek_v3",
            "--precision",
            "fp8",
            "--weight-precision",
            "fp4",
            "--set",
            "batch_size=256",
        ],  # fmt: skip
        [
            "eval",
            "compute_optimal_params",
            "--fit",
            "epoch_2024",
            "--set",
            "training_flops=1e25FLOP",
        ],
        ["sweep", "cost_per_token", "--over", "batch_size=1:10000:50", "--log", *H100],
        ["sweep", "cost_per_token", "--over", "batch_size=1:10000:50", *H100, "--json"],
        ["sweep", "step_time", "--over", "batch_size=1:10000:50", *H100, "--json"],  # chips held
        ["sweep", "step_time", "--over", "batch_size=1:10000:9", *H100, "--chips-per-point"],
        [
            "sweep",
            "cost_per_token",
            "--over",
            "batch_size=1:10000:7",
            *H100,
            "--unit",
            "USD/Mtoken",
        ],
        [
            "sweep",
            "crossover_batch",
            "--over",
            "mem_bandwidth=1 TB/s:8 TB/s:8",
            "--over",
            "flops=500 TFLOP/s:2000 TFLOP/s:4",
            "--model",
            "deepseek_v3",
        ],  # fmt: skip
    ],
)
def test_overrides_units_and_sweeps_print_the_same_bytes(argv):
    assert same(argv)


def test_errors_are_the_full_paths_own():
    for argv in (
        ["eval", "crossover_batch", *H100, "--set", "mem_bandwidth=3.35"],
        ["eval", "crossover_batch", "--hardware", "h100", "--model", "deepseek_v3"],
        ["eval", "cost_per_token", *H100, "--set", "batch_size=1e308"],
        ["sweep", "hbm_drain_time", "--hardware", "h100_sxm", "--over", "mem_bandwidth=1:3:3"],
    ):
        full, again = run(argv, False), run(argv, True)
        assert again == full and full[0] == 2, (argv, full, again)
        assert answered_fast(argv) is None


ARGV = ["eval", "crossover_batch", *H100, "--json"]


def test_a_missing_or_stale_cache_falls_back_and_says_so_once(tmp_path, monkeypatch):
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(tmp_path / "cache"))
    full = run(ARGV, False)
    first = run(ARGV, True)
    assert first[:2] == full[:2]
    assert first[2].count("\n") == 1 and "fast-start cache was missing" in first[2]
    assert run(ARGV, True) == full and answered_fast(ARGV) == full[1]
    # new presets (like edited sources) make a new key: the old cache is stale
    mine = tmp_path / "mine.toml"
    mine.write_text('[hardware.my_chip]\nname = "Mine"\nsource = "me"\n'
                    'hbm_capacity = "80 GB"\nhbm_bandwidth = "1 TB/s"\n')  # fmt: skip
    monkeypatch.setenv("CHALKBOARD_PRESETS", str(mine))
    stale = run(ARGV, True)
    assert stale[:2] == full[:2] and "fast-start cache was stale" in stale[2]
    assert run(ARGV, True) == full


def _copy_cache(cache, root, key):
    """A copy of the compiled cache in ``cache`` at ``root``, to damage (compiling one is slow):
    the fast-start folder ``key``, the key that sealed it, and two of the stores a user's cache
    folder keeps beside them (under diskcache.FOLDER: the LaTeX and display forms already worked
    out, which a repair reads rather than printing every equation's LaTeX anew with sympy)."""
    shutil.copytree(cache / key, root / key)
    shutil.copy2(cache / diskcache.KEY_FILE, root)
    for name in ("latex", "expressions"):  # the ones this process has written (it may not have)
        if (cache / diskcache.FOLDER / name).is_dir():
            shutil.copytree(cache / diskcache.FOLDER / name, root / diskcache.FOLDER / name)


def _folder(root):
    skip = (".", diskcache.FOLDER)
    (folder,) = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(skip)]
    return folder


@pytest.mark.parametrize("damage", ["core", "output", "function", "empty"])
def test_a_damaged_cache_falls_back_and_is_rewritten(cache, tmp_path, monkeypatch, damage):
    argv = ["list"] if damage == "output" else ARGV
    full = run(argv, False)
    run(argv, True)
    assert answered_fast(argv) == full[1]
    key = fast.cache_key(())
    _copy_cache(cache, tmp_path, key)
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(tmp_path))
    assert answered_fast(argv) == full[1]
    folder = _folder(tmp_path)
    if damage == "core":
        (folder / "core.json").write_text('{"format": 1, "symbols": {')
    elif damage == "empty":
        (folder / "core.json").write_text("{}")
    elif damage == "output":
        with open(folder / "out" / "list--text.txt", "a") as f:
            f.write("one more line\n")
    else:
        for entry in (folder / "fn").iterdir():
            entry.write_text("not json")
    damaged = run(argv, True)
    assert damaged[:2] == full[:2]
    assert damaged[2] == "" or "fast-start cache was damaged" in damaged[2]
    assert run(argv, True) == full and answered_fast(argv) == full[1]


def test_an_unwritable_cache_only_costs_speed(monkeypatch):
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", "/dev/null/chalkboard")
    full = run(ARGV, False)
    assert run(ARGV, True) == full and answered_fast(ARGV) is None


def test_preset_files_that_do_not_load_are_the_full_paths_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(tmp_path / "cache"))
    bad = tmp_path / "bad.toml"
    bad.write_text('[hardware.x]\nname = "X"\nsource = "me"\nhbm_capacity = "80"\n')
    argv = ["--presets", str(bad), *ARGV]
    full = run(argv, False)
    assert full[0] == 2
    for _ in range(2):
        assert run(argv, True) == full


def test_the_cache_file_names_a_hash_of_the_sources_and_presets(tmp_path, monkeypatch):
    key = fast.cache_key(())
    mine = tmp_path / "mine.toml"
    mine.write_text("")
    assert fast.cache_key((str(mine),)) != key
    monkeypatch.setattr(fast, "FORMAT", fast.FORMAT + 1)
    assert fast.cache_key(()) != key


@pytest.mark.parametrize(
    "argv, allowed",
    [
        (["eval", "cost_per_token", *H100, "--set", "batch_size=64"], set()),
        (["eval", "crossover_batch", *H100, "--json"], set()),
        (["list", "--json"], set()),
        (["presets", "models"], set()),
        (["sweep", "cost_per_token", "--over", "batch_size=1:100:5", *H100], {"numpy"}),
    ],
)
def test_the_fast_path_imports_neither_sympy_nor_pint_nor_numpy(cache, argv, allowed):
    run(argv, True)  # compile what it needs, in this process
    assert answered_fast(argv) is not None
    code = (
        "import sys\n"
        "from book.cli import main\n"
        f"assert main({argv!r}, fast=True) == 0\n"
        "print(sorted(m for m in ('sympy', 'pint', 'numpy') if m in sys.modules))\n"
    )
    env = {**os.environ, "CHALKBOARD_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1].replace("'", '"')) == sorted(allowed)


# -- trust: a cache the user does not own, or that others can write, is never read ---------------

TRUE_VALUE = "crossover_batch = 5,356 sequences"  # 989.4 TFLOP/s x 671 B x 2 B / (2 x 3.35 TB/s
# x 37 B): H100 and DeepSeek-V3's own figures, by hand: 5,356


def _planted(tmp_path, cache) -> tuple:
    """A copy of the compiled cache in which an attacker made the H100's bandwidth ten times
    smaller (so crossover_batch reads 53,560), re-sealed with the key found in that folder, as
    whoever owns the folder could."""
    full = run(["eval", "crossover_batch", *H100], False)
    run(["eval", "crossover_batch", *H100], True)
    root = tmp_path / "shared-cache"
    key = fast.cache_key(())
    shutil.copytree(cache / key, root / key)
    for name in os.listdir(cache):
        if name.startswith(".chalkboard"):
            shutil.copy2(cache / name, root)
    path = root / key / "core.json"
    blob = path.read_bytes()
    sealed = blob.startswith(b"chalkboard-store")
    data = blob.partition(b"\n")[2] if sealed else blob
    assert b"3350000000000.0" in data  # 3.35 TB/s in bytes per second
    data = data.replace(b"3350000000000.0", b"335000000000.0")
    if sealed:
        secret = (root / diskcache.KEY_FILE).read_bytes()
        data = diskcache.seal(secret, f"{key}/core.json", data)
    path.write_bytes(data)
    return root, full


def _tree(root):
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_uid) for p in root.rglob("*")}


def test_a_planted_cache_would_change_the_answer_if_it_were_the_users(tmp_path, cache, monkeypatch):
    """The plant of the tests below matters: in a folder of the user's own, sealed with the key
    there, the fast path believes it (which is why that folder must be the user's alone)."""
    root, full = _planted(tmp_path, cache)
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(root))
    assert full[1].startswith(TRUE_VALUE)
    planted = answered_fast(["eval", "crossover_batch", *H100])
    shown = re.match(r"crossover_batch = ([\d,]+) sequences", planted)
    # a tenth of the bandwidth: ten times the true 5,356 (whole numbers print whole: 53,561)
    assert shown and abs(int(shown[1].replace(",", "")) / 53_561 - 1) < 1e-4, planted


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_cache_owned_by_another_user_is_ignored_with_one_note(tmp_path, cache, monkeypatch):
    root, full = _planted(tmp_path, cache)
    for path in [root, *root.rglob("*")]:
        os.chown(path, 65534, 65534, follow_symlinks=False)  # nobody's
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(root))
    before = _tree(root)
    for _ in range(2):  # every run: the true value, and one note saying why
        code, out, err = run(["eval", "crossover_batch", *H100], True)
        assert (code, out) == full[:2] and out.startswith(TRUE_VALUE)
        assert err.count("\n") == 1 and err.startswith("note: ignored the chalkboard cache: ")
        assert "belongs to another user (uid 65534)" in err
    assert _tree(root) == before  # nothing read into the answer, nothing written there
    # a folder of the user's own inside it does not make it trusted either
    os.chown(root / fast.cache_key(()), 0, 0)
    assert run(["eval", "crossover_batch", *H100], True)[:2] == full[:2]


def test_a_cache_folder_others_can_write_is_ignored_with_one_note(tmp_path, cache, monkeypatch):
    root, full = _planted(tmp_path, cache)
    root.chmod(0o777)
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(root))
    code, out, err = run(["eval", "crossover_batch", *H100], True)
    assert (code, out) == full[:2]
    assert err.count("\n") == 1 and f"others can write {root} (mode 777)" in err
    root.chmod(0o700)  # made private again: still not believed, the plant lacks the user's seal
    key = fast.cache_key(())
    (root / key).chmod(0o770)  # in the user's private root: damage, not read, and replaced
    code, out, err = run(["eval", "crossover_batch", *H100], True)
    assert (code, out) == full[:2] and err.count("\n") == 1 and "cache was damaged" in err
    assert f"others can write {root / key}" in err


def test_an_entry_without_the_users_seal_is_damage_and_is_replaced(tmp_path, cache, monkeypatch):
    """Planted in the user's own folder (written by a program of theirs, or copied from another
    machine), a cache sealed with another key is never believed: it is damaged, and replaced."""
    root, full = _planted(tmp_path, cache)
    (root / diskcache.KEY_FILE).unlink()
    diskcache.user_key(root)  # this user's key, not the planter's
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(root))
    code, out, err = run(["eval", "crossover_batch", *H100], True)
    assert (code, out) == full[:2]
    assert err.count("\n") == 1 and "fast-start cache was damaged" in err
    assert run(["eval", "crossover_batch", *H100], True) == full
    assert answered_fast(["eval", "crossover_batch", *H100]) == full[1]


def test_every_cache_folder_is_private(tmp_path, monkeypatch):
    root = tmp_path / "fresh" / "cache"
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(root))
    run(["eval", "crossover_batch", *H100], True)
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode & 0o777
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    functions = list(root.glob("*/fn/*.json"))
    assert functions
    for path in functions:  # data, not code: no Python source in the cache
        assert b"def " not in path.read_bytes() and b"lambdify" not in path.read_bytes()


DEEP = b"[" * 100_000 + b"]" * 100_000
DAMAGE = {
    "core truncated": ("core.json", lambda b: b[: len(b) // 2]),
    "core empty": ("core.json", b""),
    "core {}": ("core.json", b"{}"),
    "core broken marker": ("core.json", b'{"format": 2, "broken": true}'),
    "core nested 100000 deep": ("core.json", b'{"format": 2, "symbols": ' + DEEP + b"}"),
    "core not utf-8": ("core.json", b"\xff\xfe\x00"),
    "core a folder": ("core.json", "folder"),
    "core a fifo": ("core.json", "fifo"),
    "core a link to /dev/zero": ("core.json", "dev-zero"),
    "core removed": ("core.json", "removed"),
    "core others can write": ("core.json", 0o666),
    "key folder a file": ("", b"not a folder"),
    "key folder others can write": ("", 0o777),
    "key removed": ("../" + diskcache.KEY_FILE, "removed"),
    "key empty": ("../" + diskcache.KEY_FILE, b""),
    "key others can read": ("../" + diskcache.KEY_FILE, 0o644),
    "function garbage": ("fn/*", b"not json"),
    "function a syntax error": ("fn/*", b'{"expr": "def f(:"}'),
    "function a folder": ("fn/*", "folder"),
    "function a fifo": ("fn/*", "fifo"),
    "function a link to /dev/zero": ("fn/*", "dev-zero"),
    "functions swapped": ("fn/*", "swap"),
    "output appended": ("out/list--text.txt", lambda b: b + b"one more line\n"),
    "output a folder": ("out/list--text.txt", "folder"),
    "output a fifo": ("out/list--text.txt", "fifo"),
    "output removed": ("out/list--text.txt", "removed"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_every_kind_of_damage_is_repaired_on_the_next_run_with_one_note(
    cache, tmp_path, monkeypatch, damage
):
    where, how = DAMAGE[damage]
    argv = ["list"] if where.startswith("out/") else ARGV
    full = run(argv, False)
    run(argv, True)
    key = fast.cache_key(())
    _copy_cache(cache, tmp_path, key)
    monkeypatch.setenv("CHALKBOARD_CACHE_DIR", str(tmp_path))
    assert answered_fast(argv) == full[1]
    folder = tmp_path / key
    if where == "fn/*":
        paths = sorted((folder / "fn").iterdir())
        if how == "swap":  # each entry moved to the next one's name
            blobs = [p.read_bytes() for p in paths]
            for path, blob in zip(paths, blobs[1:] + blobs[:1], strict=True):
                path.write_bytes(blob)
        else:
            for path in paths:
                put_damage(path, how)
    else:
        path = folder / where if where else folder
        if isinstance(how, int):
            path.chmod(how)
        elif callable(how):
            path.write_bytes(how(path.read_bytes()))
        else:
            put_damage(path, how)
    damaged = run(argv, True)  # never blocks: a FIFO is not opened for reading, nor /dev/zero
    assert damaged[:2] == full[:2]
    assert damaged[2].count("\n") == 1, damaged[2]
    assert damaged[2].startswith("note: the fast-start cache was damaged ("), damaged[2]
    assert run(argv, True) == full  # repaired: the next run is answered fast, with no note
    assert answered_fast(argv) == full[1]


@pytest.mark.parametrize("unit", ["Ys", "Es", "Zs", "ms"])
def test_a_unit_asked_for_is_the_unit_shown_in_text_and_json(unit):
    """--unit Ys once printed 0.02388 s in text while --json said Ys."""
    argv = ["eval", "hbm_drain_time", "--hardware", "h100_sxm", "--unit", unit]
    code, text, _ = run(argv, False)
    data = json.loads(run([*argv, "--json"], False)[1])
    assert code == 0 and data["unit"] == unit
    assert text.splitlines()[0].endswith(f" {unit}")
    # 80 GB / 3.35 TB/s = 23.88 ms, by hand
    assert data["value"] == pytest.approx(0.0238806 * fast_factor(unit), rel=1e-5)
    assert run(argv, True)[:2] == (code, text)  # the fast path: the same bytes


def fast_factor(unit: str) -> float:
    return {"Ys": 1e-24, "Es": 1e-18, "Zs": 1e-21, "ms": 1e3}[unit]
