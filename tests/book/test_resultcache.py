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


def test_a_changed_input_is_computed_again(empty_cache, tmp_path, counted):
    calls, compute = counted
    presets = tmp_path / "mine.toml"
    presets.write_text("a = 1\n")
    files = (str(presets),)
    resultcache.remembered("t", ("book/format.py",), ("k",), compute, files)
    resultcache.remembered("t", ("book/format.py",), ("other key",), compute, files)
    resultcache.remembered("t", ("book/cards.py",), ("k",), compute, files)  # other sources
    assert len(calls) == 3
    presets.write_text("a = 2\n")  # an edited preset file
    resultcache.remembered("t", ("book/format.py",), ("k",), compute, files)
    assert len(calls) == 4
    presets.write_text("a = 1\n")
    resultcache.remembered("t", ("book/format.py",), ("k",), compute, files)
    assert len(calls) == 4


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
    assert stored["summary"] == made["summary"] == predict.summary(presets)
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
