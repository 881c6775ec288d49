"""The README's Python examples, run verbatim: each ```python block must work as written."""

import re
from pathlib import Path

import pytest

from derivations import get

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_each_python_block_runs_as_written(number):
    exec(compile(BLOCKS[number], f"README.md python block {number + 1}", "exec"), {})


def test_the_composed_floor_is_evaluated_on_presets_as_written():
    block = next(b for b in BLOCKS if "floor = (" in b)
    names: dict = {}
    exec(compile(block, "README.md", "exec"), names)
    floor = names["floor"]
    assert len(floor.id) <= 40 and floor.id.startswith("cost_per_token_at_crossover_batch")
    assert "n_chips" not in {s.name for s in floor.rhs.free_symbols}  # it cancelled
    at = dict(hardware="h100_sxm", model="deepseek_v3")
    # the same cost, by substituting numbers: the cost per token at the crossover batch
    direct = get("cost_per_token").evaluate(**at, batch_size=get("crossover_batch").evaluate(**at))
    assert floor.evaluate(**at).to("USD/token").m == pytest.approx(direct.to("USD/token").m)
