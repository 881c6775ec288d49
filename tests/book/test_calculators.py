"""Calculators: one for every evaluable equation, and the sympy-printed JavaScript agrees with
the Python evaluation for the same inputs (run under Node, for every equation at once)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import derivations
from book.calculators import calculator, calculator_html, calculators_js, preset_values
from units import Q_

ROOT = Path(__file__).resolve().parents[2]

NODE = shutil.which("node") or shutil.which("nodejs")


def test_every_evaluable_equation_has_a_calculator():
    for eq in derivations.equations():
        assert (calculator(eq.id) is not None) == eq.evaluable, eq.id


def test_javascript_matches_python_for_every_equation(tmp_path):
    assert NODE, "Node.js is needed to run the generated calculators and was not found"
    script = tmp_path / "data.js"
    script.write_text(calculators_js())
    cases = {}
    for eq in derivations.equations():
        spec = calculator(eq.id)
        if spec is None:
            continue
        args = [a["value"] * a["factor"] for a in spec["args"]]
        cases[eq.id] = {"args": args, "factor": spec["output"]["factor"]}
    runner = (
        "global.window = {}; require(process.argv[1]);"
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const out = {};"
        "for (const [id, c] of Object.entries(cases))"
        "  out[id] = window.CHALKBOARD_FUNCTIONS[id](...c.args) / c.factor;"
        "console.log(JSON.stringify(out));"
    )
    done = subprocess.run(
        [NODE, "-e", runner, str(script)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
    )
    results = json.loads(done.stdout)
    for eq_id, value in results.items():
        spec = calculator(eq_id)
        # Python, same inputs: the form's preset choices, and every non-zero input given
        # (zero counts, such as a dense model's experts, are not valid overrides)
        # (a picker left empty, as when the case gives FLOP/s without a chip, chooses nothing)
        choices = {p["kind"]: p["selected"] for p in spec["pickers"] if p["selected"]}
        inputs = {
            a["name"]: Q_(a["value"], derivations.lookup_symbol(a["name"]).display_unit)
            for a in spec["args"]
            if a["value"]
        }
        eq = derivations.get(eq_id)
        expected = eq.evaluate(**choices, **inputs).to(eq.lhs.display_unit).m
        assert value == pytest.approx(expected, rel=1e-9), eq_id


def test_preset_values_by_hand():
    values = preset_values()
    # H100 SXM: dense FP8 1978.9 TFLOP/s, 3.35 TB/s (facts.md); Llama 3.1 70B: 80 layers
    assert values["hardware"]["h100_sxm"]["flops:fp8"] == pytest.approx(1978.9)
    assert values["hardware"]["h100_sxm"]["mem_bandwidth"] == pytest.approx(3.35)
    assert values["model"]["llama_3_1_70b"]["n_layers"] == 80
    assert values["precision"]["fp8"]["weight_bytes_per_value"] == 1
    assert values["precision"]["fp4"]["kv_bytes_per_value"] == 0.5
    # B200 (N6): 9,000 TFLOP/s dense FP4, which MXFP4 runs at too
    assert values["hardware"]["b200"]["flops:mxfp4"] == pytest.approx(9000)


def test_markdown_writes_a_calculator_back_as_it_is():
    """The build's hooks hold a calculator back from Markdown and put it back unconverted
    (book/mkdocs_hooks.py): that is what Markdown makes of it, inside an equation's reference
    block (``markdown`` on, where md_in_html parses it and writes it back) and on its own."""
    import markdown
    import yaml

    config = yaml.safe_load(
        "\n".join(
            line
            for line in (ROOT / "mkdocs.yml").read_text().splitlines()
            if "!ENV" not in line and "book.doctest_md" not in line
        )
    )
    names, options = [], {}
    for item in config["markdown_extensions"]:
        name, opts = next(iter(item.items())) if isinstance(item, dict) else (item, {})
        names.append(name)
        options[name] = opts or {}
    forms = [calculator_html(s) for e in derivations.equations() if (s := calculator(e.id))]
    assert len(forms) > 50
    for form in forms:
        for page in (
            '<details class="info" markdown>\n<summary>R</summary>\n\nText.\n\n'
            f"{form}\n\nMore.\n\n</details>\n",
            f"Text.\n\n{form}\n\nMore.\n",
        ):
            md = markdown.Markdown(extensions=names, extension_configs=options)
            assert form in md.convert(page)
