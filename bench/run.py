"""Speed benchmarks, printed as ratios measured in one run (`make bench`).

1. Compiled evaluation of cost_per_token over 10^6 batch sizes vs the same formula hand-written
   in numpy (goal: at most 1.2x), with sympy's subs on a small sample for contrast.
2. Wall time of `chalkboard eval crossover_batch --hardware h100_sxm --model deepseek_v3`
   against a bare `python -c pass`: the fast path from a warm compiled cache (goal: under 5x),
   and the full library (CHALKBOARD_FAST=0) for contrast.
3. Elasticities of cost_per_token at one point (every input's d ln y / d ln x) against one
   evaluation at that point.
4. The prediction's fits (book.predict: the fit, leave-one-out, bootstrap and ablation), CPU
   seconds in a fresh process against the goal (8 s) and as a share of a clean build's CPU; and
   two processes asking for it at once with one cache (a test session's workers), against one.
5. Full site build: CPU and wall seconds of a clean build (empty caches) and a warm one against
   the goals (20 s and 8 s of CPU), each main stage's share of a clean and of a warm build.
6. Authored problem draws (every problem on a few seeds, as the problem-bank tests draw them):
   draws per second as shipped (evaluations memoised, the registry's direct Quantity paths)
   against the same draws with both off (every evaluation resolved again, pint's own paths).
   ``python bench/run.py problems`` runs this one alone.
7. Live preview (``chalkboard serve``'s builder, book/serve.py, on a copy of the sources with the
   clean build's caches): wall seconds from a template edit to its page rebuilt, and from a preset
   edit (the H200's HBM, a value no build computed before) to the open page rebuilt (goal: 3 s)
   and to every page rebuilt, with the steps that took longest; then the edit put back (values
   computed before); then the same kind of edit with the validation chapter open (its fits
   computed again), a second core used (book/parallel.py, the preview's default) and not, min
   of 4 each, alternating. Then an equation edit (a summary in derivations/batching.py, a new
   text each time): a full build in a fresh builder (a spare, started ahead with its libraries
   imported, as ``chalkboard serve`` keeps one), from the write to the open page built ahead of
   the rest (goal: 3 s; min of 3, with its steps; the server adds at most 0.25 s to notice the
   edit and the reply, and the browser its reload), and to the end of the full build (what the
   page waited for before). ``python bench/run.py serve`` runs this one alone (with the user's
   caches).
"""

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

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


def build_cpu(command, env) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


PREDICTION = """
import resource
from units.presets import load
from book.validation import validate
from book import predict

presets = load()
validate(presets)  # the rows' bounds: the validation's work, not the fits'
usage = resource.getrusage(resource.RUSAGE_SELF)
before = usage.ru_utime + usage.ru_stime
predict.summary(presets), predict.robustness(presets)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime - before)
"""


def prediction_cpu() -> float:
    """CPU seconds of the prediction's fits (study, bootstrap, ablation, comparison) in a fresh
    process, the rows' bounds already computed."""
    run = subprocess.run([sys.executable, "-c", PREDICTION], check=True, capture_output=True)
    return float(run.stdout.decode().split()[-1])


def prediction_side_by_side() -> tuple[float, float]:
    """CPU seconds of two fresh processes asking for the prediction (``predict.prediction``) at
    once, sharing one empty cache, and of one alone: the second waits for the first's value
    (book.resultcache's lock) instead of fitting beside it, as a test session's workers and its
    build do."""
    cmd = [sys.executable, "-c", "from book import predict; from units.presets import load\n"
           "predict.prediction(load())"]  # fmt: skip
    runs = []
    for n in (2, 1):
        cache = tempfile.mkdtemp(prefix="chalkboard-bench-cache-")
        env = {**os.environ, "CHALKBOARD_CACHE_DIR": cache}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        for proc in [subprocess.Popen(cmd, env=env) for _ in range(n)]:
            assert proc.wait() == 0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        runs.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        shutil.rmtree(cache, ignore_errors=True)
    return runs[0], runs[1]


SERVE = """
import json, os, sys, time
from pathlib import Path
from book import serve

start = time.perf_counter()
pages = serve.Pages(Path(sys.argv[1]))
out = {"build": time.perf_counter() - start}
html = [0.0]
build_page = pages._build_page
def timed(*args):  # the HTML of one page, mkdocs' part
    start = time.perf_counter()
    try:
        return build_page(*args)
    finally:
        html[0] += time.perf_counter() - start
pages._build_page = timed
template = serve.TEMPLATES / "chapters" / "batching.md.j2"
text = template.read_text(encoding="utf-8")
template.write_text(text.replace("\\n# ", "\\nBenchmarkmarker.\\n\\n# ", 1), encoding="utf-8")
start = time.perf_counter()
assert pages.rebuild(["chapters/batching.md.j2"]) == ["/chapters/batching/"]
out["template"] = time.perf_counter() - start
template.write_text(text, encoding="utf-8")
pages.rebuild(["chapters/batching.md.j2"])
hardware = serve.PRESETS_DATA / "hardware.toml"
original = hardware.read_text(encoding="utf-8")
for label, edited in (("edit", original.replace('"141 GB"', '"143 GB"')), ("back", original)):
    hardware.write_text(edited, encoding="utf-8")
    html[0], shown = 0.0, []
    start = time.perf_counter()
    rebuilt = pages.presets_edited(
        ["/presets/hardware/"], lambda urls: shown.append(time.perf_counter() - start)
    )
    out[label] = {"shown": shown[0], "all": time.perf_counter() - start, "pages": len(rebuilt),
                  "steps": {**pages.timings, "HTML of the pages (mkdocs)": html[0]}}
# the validation chapter open (the prediction's fits computed again): a second core used (the
# preview's default) and not, alternately, each edit a value no build computed before
fork = {"two cores": [], "one process": []}
for i in range(4):
    for label in (("two cores", "one process") if i % 2 else ("one process", "two cores")):
        os.environ["CHALKBOARD_FORK"] = "0" if label == "one process" else ""
        edits = sum(map(len, fork.values()))  # and this process's id: new to any cache
        hardware.write_text(original.replace('"141 GB"', f'"{150 + edits}.{os.getpid()} GB"'))
        shown = []
        start = time.perf_counter()
        pages.presets_edited(
            ["/chapters/validation/"], lambda urls: shown.append(time.perf_counter() - start)
        )
        fork[label].append(shown[0])
os.environ.pop("CHALKBOARD_FORK")
hardware.write_text(original, encoding="utf-8")
pages.presets_edited()
out["validation"] = fork
# an equation edit: a full build in a fresh builder (a spare, its libraries imported), which
# builds the open page first; each run a new text (no figure or fit of it cached)
source = serve.ROOT / "derivations" / "batching.py"
equation = source.read_text(encoding="utf-8")
anchor = 'summary="k experts at one sequence'
assert equation.count(anchor) == 1
runs = []
for i in range(3):
    builder = serve.Builder(Path(f"{sys.argv[1]}-equation-{i}"), None)
    time.sleep(5)  # a spare waits for the next edit with its libraries imported
    start = time.perf_counter()
    source.write_text(equation.replace(anchor, f'summary="Benchmarkmarker{i} ' + anchor[9:]))
    builder.go(["--previous", sys.argv[1], "--first", "/chapters/batching/"])
    got = builder.reply(900)
    runs.append({"shown": time.perf_counter() - start, "steps": got["timings"], "cpu": got["cpu"]})
    assert got["pages"] == ["/chapters/batching/"], got
    if i == 0:  # and the rest: what the open page waited for before
        assert builder.reply(1800).get("ok"), builder.reply(None)
        runs[0]["all"] = time.perf_counter() - start
    builder.stop()
source.write_text(equation, encoding="utf-8")
out["equation"] = runs
print(json.dumps(out))
"""


def serve_latency(env) -> dict:
    """SERVE's seconds, run on a copy of the sources (it edits a template and a preset file)."""
    import json

    folder = Path(tempfile.mkdtemp(prefix="chalkboard-bench-serve-"))
    try:
        for name in ("units", "derivations", "book"):
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(ROOT / name, folder / "src" / name, ignore=ignore)
        shutil.copy(ROOT / "mkdocs.yml", folder / "src" / "mkdocs.yml")
        env = {**env, "PYTHONPATH": str(folder / "src")}
        env.pop("CHALKBOARD_PRESETS", None)
        cmd = [sys.executable, "-c", SERVE, str(folder / "into")]
        run = subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=folder / "src")
        return json.loads(run.stdout.decode().splitlines()[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def print_serve(got: dict) -> None:
    edit, back = got["edit"], got["back"]
    print("live preview (chalkboard serve's builder on a copy, warm caches), wall seconds")
    print(f"  {'first build':<36} {got['build']:6.2f} s")
    print(f"  {'template edit, its page rebuilt':<36} {got['template']:6.2f} s")
    print(
        f"  {'preset edit, the open page shown':<36} {edit['shown']:6.2f} s   "
        f"ratio {edit['shown'] / 3:.2f}x the goal (3 s); {edit['shown'] / got['template']:.1f}x "
        "the template edit"
    )
    print(
        f"  {'preset edit, every page rebuilt':<36} {edit['all']:6.2f} s   "
        f"ratio {edit['all'] / edit['shown']:.1f}x the open page ({edit['pages']} pages); longest:"
    )
    for step, seconds in sorted(edit["steps"].items(), key=lambda kv: -kv[1])[:4]:
        print(f"    {step:<34} {seconds:6.2f} s   {seconds / edit['all']:5.0%}")
    print(
        f"  {'put back, every page rebuilt':<36} {back['all']:6.2f} s   "
        f"(the open page {back['shown']:.2f} s; values computed before)"
    )
    fork = {label: min(times) for label, times in got["validation"].items()}
    print(
        f"  {'preset edit, validation open':<36} {fork['two cores']:6.2f} s   "
        f"ratio {fork['two cores'] / 3:.2f}x the goal (3 s); min of "
        f"{len(got['validation']['two cores'])}; {fork['two cores'] / fork['one process']:.2f}x "
        f"one process ({fork['one process']:.2f} s: no forked copy)"
    )
    runs = got["equation"]
    fastest = min(runs, key=lambda run: run["shown"])
    print(
        f"  {'equation edit, the open page shown':<36} {fastest['shown']:6.2f} s   "
        f"ratio {fastest['shown'] / 3:.2f}x the goal (3 s); min of {len(runs)}; the builder's "
        f"CPU {fastest['cpu']:.2f} s; its steps:"
    )
    for step, seconds in fastest["steps"].items():
        print(f"    {step:<34} {seconds:6.2f} s   {seconds / fastest['shown']:5.0%}")
    print(
        f"  {'equation edit, the full build':<36} {runs[0]['all']:6.2f} s   "
        f"ratio {runs[0]['all'] / runs[0]['shown']:.1f}x the open page (what it waited for before)"
    )


# the build's main stages: (file, function) whose cumulative time is the stage's
STAGES = {
    "chapter contexts": ("book/compute.py", "_chapter_context"),
    "figures": ("book/figures.py", "figures_for"),
    "practice problems": ("book/problems.py", "problem_pages"),
    "flashcards": ("book/cards.py", "card_pages"),
    "calculators": ("book/calculators.py", "calculators_js"),
    "notebooks": ("book/notebooks.py", "write_notebooks"),
    "tutorial": ("book/tutorial.py", "tutorial_page"),
    "derivation checks": ("derivations/core.py", "check"),
    "MkDocs pass": ("book/site.py", "_mkdocs_build"),
}


def build_stages(command, env, profile: Path) -> dict[str, float]:
    """Each of STAGES' share of one profiled build (cProfile: about twice as slow, evenly)."""
    import pstats

    python = Path(command[0]).with_name("python")
    cmd = [str(python), "-m", "cProfile", "-o", str(profile), "-m", "book.cli", *command[1:]]
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    stats = pstats.Stats(str(profile)).stats
    cumulative = {}
    for (path, _, name), (_, _, _, ct, _) in stats.items():
        for stage, (file, function) in [*STAGES.items(), ("all", ("book/site.py", "_build"))]:
            if name == function and path.endswith(file):
                cumulative[stage] = cumulative.get(stage, 0) + ct
    return {stage: cumulative.get(stage, 0) / cumulative["all"] for stage in STAGES}


def problem_draws(seeds: int = 6, repeat: int = 3) -> tuple[float, float, int]:
    """Draws per CPU second of every authored problem on ``seeds`` seeds, as shipped and with
    the evaluation memo and the direct Quantity paths off (best of ``repeat`` runs of each,
    alternating, each from empty memos: the evaluations' and the problem files' own), and the
    number of draws in a run."""
    from unittest import mock

    import units.registry
    from book import problem_bank
    from book.problems import _authored
    from derivations import CHAPTERS, inputs
    from units import reads

    presets = load()
    modules = [m for c in CHAPTERS for m in problem_bank.modules(c.id)]

    def draw_all():
        inputs._VALUES.clear()
        reads.forget_all()  # the problem files' own memos (book.problem_bank.PresetsMemo) too
        for seed in range(seeds):
            for module in modules:
                _authored(module, seed, presets)

    def plain():
        with (
            mock.patch.object(inputs, "evaluation_key", lambda *args, **kwargs: None),
            mock.patch.object(units.registry, "_DIRECT", False),
        ):
            draw_all()

    def cpu(fn) -> float:  # CPU seconds of this process: the machine's other load counts less
        start = time.process_time()
        fn()
        return time.process_time() - start

    draw_all()  # imports the problem files, compiles their equations
    shipped, before = [], []
    for _ in range(repeat):
        before.append(cpu(plain))
        shipped.append(cpu(draw_all))
    n = seeds * len(modules)
    return n / min(shipped), n / min(before), n


def hand_written(batch, p):
    """cost_per_token written directly in numpy, SI magnitudes (USD per token): the larger of
    compute and memory time per step (memory: the KV cache plus the weights, of which the routed
    experts' share is read only for experts some sequence of the batch uses), over the batch."""
    compute = batch * p.flops_per_token / p.flops
    weights = p.weight_bytes * (1 - p.routed_share * (1 - p.k_over_e) ** batch)
    memory = (batch * p.kv_bytes_per_sequence + weights) / p.bandwidth
    return p.price * np.maximum(compute, memory) / batch


def scalars(detail) -> SimpleNamespace:
    """The batch-independent numbers hand_written needs, from one evaluation's inputs (SI)."""
    v = {name: i.base.magnitude for name, i in detail.inputs.items()}
    moe_layers = v["d_model"] * (v["n_layers"] - v["dense_layers"])
    expert = v["d_ff_expert"] * v["ffn_matrices"]
    total = (
        v["attention_params"] * v["n_layers"]
        + v["d_ff"] * v["d_model"] * v["dense_layers"] * v["ffn_matrices"]
        + v["d_model"] * v["embedding_matrices"] * v["vocab"]
        + moe_layers * expert * (v["experts_routed"] + v["experts_shared"])
        + v["experts_routed"] * moe_layers
    )  # the parameters counted from the architecture
    return SimpleNamespace(
        flops=v["flops"],
        bandwidth=v["mem_bandwidth"],
        price=v["price_per_chip_hour"],
        flops_per_token=v["attention_flops_per_token"] * v["context_length"]
        + v["flops_per_param_token"] * v["n_active"],
        weight_bytes=v["n_total"] * v["weight_bytes_per_value"],
        routed_share=v["experts_routed"] * moe_layers * expert / total,
        k_over_e=v["experts_active"] / max(v["experts_routed"], 1),
        kv_bytes_per_sequence=v["context_length"]
        * v["kv_bytes_per_value"]
        * v["kv_values_per_token"],
    )


def main():
    presets = load()
    batches = np.geomspace(1, 1e5, N)
    eq = get("cost_per_token")
    kw = dict(hardware="h100_sxm", model="deepseek_v3")
    detail = eq.evaluate_detailed(**kw, batch_size=1)
    p = scalars(detail)

    swept = eq.sweep("batch_size", batches, **kw)
    reference = hand_written(batches, p)
    assert np.allclose(swept.to("USD/token").magnitude, reference, rtol=1e-9)

    t_numpy = best(lambda: hand_written(batches, p))
    t_sweep = best(lambda: eq.sweep("batch_size", batches, **kw))
    expr = eq.expanded()
    values = {
        s.sym: detail.inputs[s.name].value.to_base_units().magnitude
        for s in map(lookup_symbol, (x.name for x in expr.free_symbols))
        if s.name in detail.inputs
    }
    batch_sym = lookup_symbol("batch_size").sym
    sample = batches[:: N // 3]  # seconds per point: a few points make the contrast
    t_subs = best(lambda: [float(expr.subs({**values, batch_sym: b})) for b in sample], 1)
    per_point_subs = t_subs / len(sample)
    per_point_sweep = t_sweep / N

    points = [dict(kw, batch_size=b) for b in (1, 8, 64, 512, 4096)]
    n_inputs = len(eq.elasticities(**points[0]))  # differentiates and compiles once
    t_el = best(lambda: [eq.elasticities(**q) for q in points]) / len(points)
    t_ev = best(lambda: [eq.evaluate(**q) for q in points]) / len(points)

    exe = Path(sys.executable).with_name("chalkboard")
    cmd = [str(exe), "eval", "crossover_batch", "--hardware", "h100_sxm", "--model", "deepseek_v3"]
    cache = tempfile.mkdtemp(prefix="chalkboard-bench-cache-")
    fast_env = {**os.environ, "CHALKBOARD_CACHE_DIR": cache, "CHALKBOARD_FAST": "1"}
    full_env = {**os.environ, "CHALKBOARD_FAST": "0"}
    subprocess.run(cmd, check=True, capture_output=True, env=fast_env)  # compiles the cache
    warm = subprocess.run(cmd, check=True, capture_output=True, env=fast_env)
    assert warm.stdout == subprocess.run(cmd, check=True, capture_output=True, env=full_env).stdout
    t_fast = best(lambda: subprocess.run(cmd, check=True, capture_output=True, env=fast_env), 7)
    t_full = best(lambda: subprocess.run(cmd, check=True, capture_output=True, env=full_env), 3)
    t_python = best(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), 7)
    shutil.rmtree(cache, ignore_errors=True)

    cpu_prediction = prediction_cpu()
    cpu_two, cpu_one = prediction_side_by_side()

    out = Path(tempfile.mkdtemp(prefix="chalkboard-bench-")) / "site"
    build_env = {**os.environ, "CHALKBOARD_CACHE_DIR": str(out.parent / "cache")}
    build = [str(exe), "build", "--out", str(out)]
    cpu_clean, wall_clean = build_cpu(build, build_env)  # empty caches
    cpu_warm, t_build = min(build_cpu(build, build_env) for _ in range(2))
    stages = build_stages(build, build_env, out.parent / "build.prof")
    clean_env = {**build_env, "CHALKBOARD_CACHE_DIR": str(out.parent / "cache-clean")}
    stages_clean = build_stages(build, clean_env, out.parent / "clean.prof")
    served = serve_latency(build_env)  # the warm build's caches
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
        f"ratio {t_sweep / t_numpy:.2f}x numpy (goal <= 1.2x)"
    )
    print(
        f"  sympy subs, per point     {per_point_subs * 1e6:8.1f} us   "
        f"ratio {per_point_subs / per_point_sweep:,.0f}x the compiled sweep per point"
    )
    print(f"elasticities of cost_per_token to its {n_inputs} inputs, one point")
    print(f"  evaluate                  {t_ev * 1e3:8.2f} ms")
    print(
        f"  elasticities              {t_el * 1e3:8.2f} ms   "
        f"ratio {t_el / t_ev:.1f}x one evaluation"
    )
    print("chalkboard eval crossover_batch --hardware h100_sxm --model deepseek_v3")
    print(f"  bare python -c pass       {t_python * 1e3:8.0f} ms")
    print(
        f"  fast path (warm cache)    {t_fast * 1e3:8.0f} ms   "
        f"ratio {t_fast / t_python:.1f}x a bare python start (goal < 5x)"
    )
    print(
        f"  full library              {t_full * 1e3:8.0f} ms   "
        f"ratio {t_full / t_python:.1f}x a bare python start"
    )
    print("site build (chalkboard build), CPU seconds (user + system) and wall seconds")
    for name, cpu, wall, goal in (
        ("clean (empty caches)", cpu_clean, wall_clean, 20),
        ("warm", cpu_warm, t_build, 8),
    ):
        print(
            f"  {name:<24} {cpu:8.1f} s CPU  ratio {cpu / goal:.2f}x the goal ({goal} s); "
            f"{wall:.1f} s wall"
        )
    print("  share of a build (profiled; a stage that triggers another includes it):")
    print(f"    {'':<24} {'clean':>6} {'warm':>6}")
    for name, share in stages.items():
        print(f"    {name:<24} {stages_clean[name]:6.0%} {share:6.0%}")
    print(
        "prediction's fits (book.predict: fit, leave-one-out, bootstrap, ablation), fresh process"
    )
    print(
        f"  {'CPU seconds':<24} {cpu_prediction:8.1f} s CPU  ratio {cpu_prediction / 8:.2f}x the "
        f"goal (8 s); {cpu_prediction / cpu_clean:.0%} of a clean build's CPU"
    )
    print(
        f"  {'two processes at once':<24} {cpu_two:8.1f} s CPU  ratio {cpu_two / cpu_one:.2f}x one "
        f"alone ({cpu_one:.1f} s; 2x if each fitted it; each imports and loads the presets)"
    )
    # each product made again in this process, from scratch (a figure is drawn, not read from
    # the build's cache): what a change to its code costs, not a share of the warm build above
    print("each product made from scratch in one process (not shares of a build: a warm build")
    print("reads figures and pages from its caches; the shares above are the profiled split)")
    for name, t in parts.items():
        print(f"  {name:<24} {t:6.2f} s")
    print_serve(served)
    print_problem_draws()


def print_problem_draws():
    shipped, before, n = problem_draws()
    print(f"authored problem draws ({n} per run: every problem on a few seeds)")
    print(f"  memo and direct paths off {before:8.1f} draws per CPU second")
    print(
        f"  as shipped                {shipped:8.1f} draws per CPU second   "
        f"ratio {shipped / before:.2f}x"
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["problems"]:
        print_problem_draws()
    elif sys.argv[1:] == ["serve"]:
        print_serve(serve_latency(dict(os.environ)))
    else:
        main()
