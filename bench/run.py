"""Speed benchmarks, printed as ratios measured in one run (`make bench`).

1. Compiled evaluation of cost_per_token over 10^6 batch sizes vs the same formula hand-written
   in numpy (goal: within 2x), with sympy's subs on a small sample for contrast.
2. Wall time of `chalkboard eval crossover_batch --hardware h100_sxm --model deepseek_v3`
   (goal: under 1 s), against a bare `python -c pass` for scale.
3. Full site build time.
"""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from derivations import get, lookup_symbol
from units.presets import load

N = 1_000_000
ROOT = Path(__file__).resolve().parents[1]


def best(fn, repeat=5):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def hand_written(batch, hw, model, bytes_per_value, kv, context, price):
    """cost_per_token written directly in numpy, SI magnitudes (USD per token)."""
    flops = hw.dense_flops_bf16.to("FLOP/s").magnitude
    bw = hw.hbm_bandwidth.to("B/s").magnitude
    n_total = model.params_total.magnitude
    n_active = model.params_active.magnitude
    compute = 2 * batch * n_active / flops
    memory = (n_total * bytes_per_value + batch * context * kv) / bw
    return price * np.maximum(compute, memory) / batch


def main():
    presets = load()
    hw, model = presets.get("hardware", "h100_sxm"), presets.get("model", "deepseek_v3")
    batches = np.geomspace(1, 1e5, N)
    eq = get("cost_per_token")
    kw = dict(hardware="h100_sxm", model="deepseek_v3")
    detail = eq.evaluate_detailed(**kw, batch_size=1)
    kv = detail.inputs["kv_bytes_per_token"].value.to("B/token").magnitude
    context = detail.inputs["context_length"].value.to("token").magnitude
    price = detail.inputs["price_per_chip_hour"].value.to("USD/chip/s").magnitude

    swept = eq.sweep("batch_size", batches, **kw)
    reference = hand_written(batches, hw, model, 2.0, kv, context, price)
    assert np.allclose(swept.to("USD/token").magnitude, reference, rtol=1e-12)

    t_numpy = best(lambda: hand_written(batches, hw, model, 2.0, kv, context, price))
    t_sweep = best(lambda: eq.sweep("batch_size", batches, **kw))
    expr = eq.expanded()
    values = {
        s.sym: detail.inputs[s.name].value.to_base_units().magnitude
        for s in map(lookup_symbol, (x.name for x in expr.free_symbols))
        if s.name in detail.inputs
    }
    batch_sym = lookup_symbol("batch_size").sym
    sample = batches[:: N // 200]
    t_subs = best(lambda: [float(expr.subs({**values, batch_sym: b})) for b in sample], 1)
    per_point_subs = t_subs / len(sample)
    per_point_sweep = t_sweep / N

    exe = Path(sys.executable).with_name("chalkboard")
    cmd = [str(exe), "eval", "crossover_batch", "--hardware", "h100_sxm", "--model", "deepseek_v3"]
    t_cli = best(lambda: subprocess.run(cmd, check=True, capture_output=True), 5)
    t_python = best(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), 5)

    out = Path(tempfile.mkdtemp(prefix="chalkboard-bench-")) / "site"
    t_build = best(
        lambda: subprocess.run(
            [str(exe), "build", "--out", str(out)], check=True, capture_output=True
        ),
        2,
    )
    shutil.rmtree(out.parent, ignore_errors=True)

    from book.calculators import calculators_js
    from book.cards import flashcards
    from book.claims import audit_claims
    from book.figures import FIGURES
    from book.problems import problem_set

    parts = {
        "figures (all)": best(lambda: [f(presets) for f in FIGURES.values()], 1),
        "flashcards": best(lambda: flashcards(presets), 2),  # the 2nd run reuses chapter pages
        "practice problems": best(lambda: problem_set(seed=0, count=6, presets=presets), 1),
        "calculators": best(lambda: calculators_js(presets), 1),
        "claims audit": best(lambda: audit_claims(presets), 1),
    }

    print(f"cost_per_token over {N:,} batch sizes")
    print(f"  hand-written numpy        {t_numpy * 1e3:8.1f} ms")
    print(
        f"  chalkboard sweep          {t_sweep * 1e3:8.1f} ms   "
        f"ratio {t_sweep / t_numpy:.2f}x numpy (goal <= 2x)"
    )
    print(
        f"  sympy subs, per point     {per_point_subs * 1e6:8.1f} us   "
        f"ratio {per_point_subs / per_point_sweep:,.0f}x the compiled sweep per point"
    )
    print("chalkboard eval crossover_batch --hardware h100_sxm --model deepseek_v3")
    print(
        f"  wall time                 {t_cli * 1e3:8.0f} ms   "
        f"ratio {t_cli / t_python:.1f}x a bare python start (goal < 1 s)"
    )
    print(f"site build (chalkboard build) {t_build:6.2f} s, of which (in-process, warm):")
    for name, t in parts.items():
        print(f"  {name:<24} {t:6.2f} s   {t / t_build:5.0%} of the build")


if __name__ == "__main__":
    main()
