"""Measurement presets: every row sourced and complete; bad rows rejected with one clear error."""

import pytest

from units import ChalkboardError
from units.presets import FEATURES, MEASURED, load, parse_file

ROW = """
[measurement.mine]
name = "mine"
source = "my benchmark"
system = "1 chip"
hardware = "h100_sxm"
chips = 1
model = "llama_3_1_8b"
scenario = "offline"
input_tokens = "1000 token"
output_tokens = "200 token"
throughput_per_chip = "5000 token/s"
"""


def test_every_builtin_row_is_sourced_and_states_what_it_measured():
    rows = load().by_kind["measurement"]
    assert len(rows) >= 60  # measurements.md: 40 inference rows, 15 supplementary, 8 training
    for row in rows.values():
        assert row.source_of("source").strip(), row.id
        assert any(row.get(m) is not None for m in MEASURED), row.id
        assert set(row.get("features", "").split()) <= set(FEATURES), row.id


def test_a_system_total_is_stored_per_chip():
    row = load().get("measurement", "mlperf_h200_x8_llama2_70b_offline")
    # measurements.md row 1: 34,812.1 tokens/s over 8 H200
    assert row.throughput_per_chip.to("token/s").m == pytest.approx(34812.1 / 8)


@pytest.mark.parametrize(
    "extra, message",
    [
        ('features = "speculative"', "unknown feature"),
        ('assumed = "batch"', "'batch' is not a field"),
        ('input_tokens_low = "10 token"', "go together"),
        ("chips_per_replica = 2", "exceeds chips"),
        ('mfu = "1.5"', "fraction"),
    ],
)
def test_bad_rows_are_rejected(tmp_path, extra, message):
    path = tmp_path / "bad.toml"
    path.write_text(ROW + extra + "\n")
    with pytest.raises(ChalkboardError, match=message):
        parse_file(path)


def test_a_serving_row_needs_its_lengths(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(ROW.replace('output_tokens = "200 token"\n', ""))
    with pytest.raises(ChalkboardError, match="needs input_tokens and output_tokens"):
        parse_file(path)


def test_a_value_outside_its_range_is_rejected(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(ROW + 'input_tokens_low = "10 token"\ninput_tokens_high = "100 token"\n')
    with pytest.raises(ChalkboardError, match="must lie within"):
        parse_file(path)
