"""book/resultcache.py: slow, pure build steps kept across builds as sealed JSON."""

import pytest

from book import resultcache
from units import diskcache


def _entries(root, namespace):
    return [p for p in (root / diskcache.FOLDER / namespace).rglob("*") if p.is_file()]


@pytest.fixture
def counted():
    calls = []

    def compute():
        calls.append(1)
        return {"value": 0.1 + 0.2, "rows": [1, 2.5, "x"], "nan": float("nan")}

    return calls, compute


def test_a_result_is_computed_once_and_comes_back_the_same(empty_cache, counted):
    calls, compute = counted
    first = resultcache.remembered("t", ("book/format.py",), ("k",), compute)
    again = resultcache.remembered("t", ("book/format.py",), ("k",), compute)
    assert len(calls) == 1
    assert again["value"] == first["value"] == 0.1 + 0.2  # every bit of a float
    assert again["rows"] == [1, 2.5, "x"] and again["nan"] != again["nan"]


def test_other_sources_or_key_are_other_entries(empty_cache, counted):
    calls, compute = counted
    resultcache.remembered("t", ("book/format.py",), ("k",), compute)
    resultcache.remembered("t", ("book/format.py",), ("other key",), compute)
    resultcache.remembered("t", ("book/cards.py",), ("k",), compute)  # other sources
    assert len(calls) == 3


def _parameters_copy(tmp_path):
    """The built-in preset files with parameters.toml replaced by a copy that the test edits."""
    from units.presets import BUILTIN_FILES

    mine = tmp_path / "parameters.toml"
    files = []
    for path in BUILTIN_FILES:
        if path.name == "parameters.toml":
            mine.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
            path = mine
        files.append(str(path))
    return mine, tuple(files)


def test_a_value_is_computed_again_only_when_a_preset_it_read_changed(empty_cache, tmp_path):
    """The entry is found by the values of the presets it read (units.reads): an edit of
    another preset, or of another field of the same preset, finds it; an edit of what it read
    computes it again, and putting the value back finds the first entry."""
    from units.presets import _load

    mine, files = _parameters_copy(tmp_path)
    original = mine.read_text(encoding="utf-8")
    calls = []

    def period():  # reads one field of one preset
        calls.append(1)
        return _load(files).get("parameter", "train_period").value.to("ms").m

    def remembered():
        _load.cache_clear()  # the file changed under the same name (as book.serve does)
        return resultcache.remembered("t", ("book/format.py",), ("k",), period, files)

    assert remembered() == 20.0 and len(calls) == 1
    assert original.count('value = "8192 token/sequence"') == 1
    mine.write_text(original.replace('"8192 token/sequence"', '"4096 token/sequence"'))
    assert remembered() == 20.0 and len(calls) == 1  # another preset edited
    edited = original.replace("'a batch departs every 20 ms'", "'a batch leaves every 20 ms'")
    assert edited != original
    mine.write_text(edited)
    assert remembered() == 20.0 and len(calls) == 1  # another field of the same preset (its note)
    assert original.count('value = "20 ms"') == 1
    mine.write_text(original.replace('value = "20 ms"', 'value = "25 ms"'))
    assert remembered() == 25.0 and len(calls) == 2  # what it read
    mine.write_text(original)
    assert remembered() == 20.0 and len(calls) == 2  # each value's entry is kept
    mine.write_text(original.replace('value = "20 ms"', 'value = "25 ms"'))
    assert remembered() == 25.0 and len(calls) == 2


def test_an_edit_put_back_finds_the_value_whose_reads_were_recorded_otherwise(
    empty_cache, tmp_path
):
    """The reads one computation records depend on what was cached around it (a cached result
    notes the reads it was stored with): the build's computation recorded a field more than the
    computation after a preset edit. Putting the edit back (``chalkboard serve``'s tests do)
    finds the build's value, not a third computation."""
    from units.presets import _load

    mine, files = _parameters_copy(tmp_path)
    original = mine.read_text(encoding="utf-8")
    calls = []

    def period():  # reads one field; its first computation noted another one too
        calls.append(1)
        presets = _load(files)
        if len(calls) == 1:
            _ = presets.get("parameter", "context_length").value
        return presets.get("parameter", "train_period").value.to("ms").m

    def remembered():
        _load.cache_clear()  # the file changed under the same name (as book.serve does)
        return resultcache.remembered("t", ("book/format.py",), ("k",), period, files)

    assert remembered() == 20.0 and len(calls) == 1
    assert original.count('value = "20 ms"') == 1
    mine.write_text(original.replace('value = "20 ms"', 'value = "25 ms"'))
    assert remembered() == 25.0 and len(calls) == 2
    mine.write_text(original)
    assert remembered() == 20.0 and len(calls) == 2  # the build's value, found by its reads
    mine.write_text(original.replace('value = "20 ms"', 'value = "25 ms"'))
    assert remembered() == 25.0 and len(calls) == 2  # the edit's value, by its own reads
    mine.write_text(original.replace('value = "20 ms"', 'value = "30 ms"'))
    assert remembered() == 30.0 and len(calls) == 3  # what it read, to a value not seen


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data.replace(b"0.30000000000000004", b"0.3"),  # an edited number
        lambda data: data[:-2],  # truncated
        lambda data: b"chalkboard-store-2 " + b"0" * 64 + b'\n{"value": 1}',  # planted
    ],
)
def test_a_tampered_entry_is_refused_and_computed_again(
    empty_cache, counted, damage, capsys, monkeypatch
):
    calls, compute = counted
    monkeypatch.setattr(diskcache, "NOTED", set())  # each note is said once per process
    resultcache.remembered("t", ("book/format.py",), ("k",), compute)
    (entry,) = _entries(empty_cache, "t")
    entry.write_bytes(damage(entry.read_bytes()))
    again = resultcache.remembered("t", ("book/format.py",), ("k",), compute)
    assert len(calls) == 2 and again["value"] == 0.1 + 0.2
    assert "damaged entry" in capsys.readouterr().err
    resultcache.remembered("t", ("book/format.py",), ("k",), compute)  # rewritten: read again
    assert len(calls) == 2


def test_what_is_not_plain_data_is_used_and_never_stored(empty_cache):
    value = resultcache.remembered("t", (), ("k",), lambda: {"set": {1, 2}})
    assert value == {"set": {1, 2}} and _entries(empty_cache, "t") == []


def test_the_prediction_from_the_store_is_the_predictions_own(empty_cache, monkeypatch):
    from book import predict
    from units.presets import load

    presets = load()
    monkeypatch.setattr(predict, "_PREDICTIONS", {})
    made = predict.prediction(presets)
    monkeypatch.setattr(predict, "_PREDICTIONS", {})
    monkeypatch.setattr(predict, "study", None)  # the second comes from the store alone
    stored = predict.prediction(presets)
    monkeypatch.undo()
    assert stored["summary"] == made["summary"]
    own = predict.summary(presets)  # the stored summary adds the bootstrap and the ablation
    assert {k: made["summary"][k] for k in own} == own
    assert {"bootstrap", "ablation"} <= made["summary"].keys()
    assert stored["out_of_sample"] == made["out_of_sample"] == predict.out_of_sample(presets)
    cases = {c.id: c for c in predict.study(presets)["cases"]}
    assert stored["cases"].keys() == cases.keys()
    for i, c in stored["cases"].items():
        assert (c.kind, c.measured) == (cases[i].kind, cases[i].measured)


def test_the_tutorial_from_the_store_is_the_page_its_blocks_print(empty_cache, monkeypatch):
    from book import tutorial

    page = tutorial.tutorial_page()
    monkeypatch.setattr(tutorial, "run_blocks", None)  # the second comes from the store alone
    assert tutorial.tutorial_page() == page
    monkeypatch.undo()
    text = tutorial.TUTORIAL.read_text(encoding="utf-8")
    assert page == tutorial.run_blocks(text, tutorial.TUTORIAL.stem)


def test_two_computing_the_same_result_at_once_compute_it_once(empty_cache):
    """Two at once (threads here; the workers of a test session and its build are processes,
    and ``flock`` excludes both alike): the second waits for the first and reads its value."""
    import threading
    import time

    calls, got = [], []
    started = threading.Event()

    def compute():
        calls.append(1)
        started.set()
        time.sleep(0.3)  # the other thread asks while this one computes
        return {"value": len(calls)}

    def ask():
        got.append(resultcache.remembered("t", ("book/format.py",), ("k",), compute))

    first = threading.Thread(target=ask)
    first.start()
    started.wait(10)
    ask()
    first.join()
    assert len(calls) == 1 and got == [{"value": 1}, {"value": 1}]


def test_a_copy_of_the_project_digests_the_same_inputs_alike(tmp_path):
    """Files inside the project are named relative to it: a copy (``chalkboard serve``'s, a second
    checkout) finds what this one stored from the same bytes; a changed byte is another digest."""
    import os
    import shutil
    import subprocess
    import sys

    for name in ("units", "derivations", "book"):
        shutil.copytree(
            resultcache.ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    code = (
        "from book import resultcache; from units.presets import BUILTIN_FILES as files\n"
        "print(resultcache.inputs_digest(('book/format.py',), tuple(map(str, files))))"
    )

    def digest_in(root) -> str:
        # a fresh process each: this one's state (an --extra module a test loaded) is in its digest
        env = dict(os.environ, PYTHONPATH=str(root))
        run = subprocess.run(
            [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    def copy_digest() -> str:
        return digest_in(tmp_path)

    here = digest_in(resultcache.ROOT)
    assert copy_digest() == here
    hardware = tmp_path / "units" / "data" / "hardware.toml"
    hardware.write_bytes(hardware.read_bytes() + b"\n# an edit\n")
    assert copy_digest() != here
