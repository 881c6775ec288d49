"""The prediction: honest leave-one-out, never above the bound, the predict command's errors."""

import io
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book import predict
from book.cli import main
from units.presets import load


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def study():
    return predict.study(load())


def fitted_cases(study):
    return [c for c in study["cases"] if c.id in study["loo"]]


def test_the_left_out_row_is_predicted_by_a_fit_that_never_saw_it(study):
    cases = fitted_cases(study)
    left = next(c for c in cases if c.id == "mlperf_h200_x8_llama2_70b_offline")
    others = [c for c in cases if c is not left]
    z = predict.least_squares(others, study["model"].z, iterations=20)
    assert study["loo"][left.id] == pytest.approx(
        predict.predict_case(left, predict._unpack(z)), rel=1e-9
    )
    # the reported figure does not move when the left-out measurement does: it was not fitted on
    liar = predict.Case(**{**left.__dict__, "measured": left.measured * 10})
    z_liar = predict.least_squares(others, study["model"].z, iterations=20)
    assert predict.predict_case(liar, predict._unpack(z_liar)) == pytest.approx(
        study["loo"][left.id], rel=1e-9
    )
    # while a fit that includes the row does move with it (so leaving it out mattered)
    z_in = predict.least_squares([*others, liar], study["model"].z, iterations=20)
    assert predict.predict_case(liar, predict._unpack(z_in)) > study["loo"][left.id] * 1.01


def test_no_prediction_is_above_its_bound(study):
    for c in study["cases"]:
        if c.kind == "none":
            continue
        assert study["predicted"][c.id] <= c.bound * (1 + 1e-9), c.id
        if c.id in study["loo"]:
            assert study["loo"][c.id] <= c.bound * (1 + 1e-9), c.id


def test_rows_newer_than_the_fit_and_unmodelled_speculation_stay_out_of_it(study):
    fitted = set(study["model"].fitted)
    for c in study["cases"]:
        if c.held_out or c.excluded:
            assert c.id not in fitted, c.id
    assert any(c.held_out for c in study["cases"])  # the v6.1 rows are the out-of-sample test
    # speculation with its published acceptance is modelled (and fitted); without it, not
    assert "trtllm_b200_r1_batch1_mtp" in fitted
    assert "inferencex_b200_r1_fp4_125" not in fitted


def test_rows_no_step_model_describes_are_reported_apart_with_their_reason(study):
    s = predict.summary(load())
    apart = [c for c in study["cases"] if predict.not_modelled(c)]
    # the InferenceX sweeps (read between measured points) and the MTP rows: out of the fit...
    ids = {c.id for c in apart}
    assert "inferencex_b200_llama33_fp8_76" in ids and "inferencex_gb200_r1_fp4_125" in ids
    assert "trtllm_b200_r1_batch1_mtp" not in ids  # its acceptance (2.82 tokens) is published
    assert not ids & set(study["model"].fitted)
    # ...but not out of the report: every one is counted, under its reason
    assert s["not_modelled"]["count"] == len(apart) >= 8
    assert sum(len(v) for v in s["not_modelled_reasons"].values()) == len(apart)
    assert all(w in predict.NOT_MODELLED.values() for w in s["not_modelled_reasons"])
    how = predict.out_of_sample(load())
    assert how["inferencex_b200_llama33_fp8_76"][1].startswith("not in the fit: a throughput read")


def test_prompt_tokens_cross_the_tensor_parallel_all_reduces(study):
    # H200 x8 Llama 3.1 405B offline: 9,429 prompt tokens per 652 output tokens (the dataset's
    # mean prompt and the log's derived output), so each output token's step carries 1 + 9429/652
    # tokens'
    # all-reduces; one chip (Llama 2 70B at TP1) sends nothing either way
    cases = {c.id: c for c in study["cases"]}
    tp = cases["mlperf_h200_x8_llama31_405b_offline"]
    row = load().get("measurement", tp.id)
    from book.validation import bound_inputs

    kw = bound_inputs(row, load())
    decode_only = predict._communication(
        load().get("model", row.model), load().get("hardware", row.hardware), kw, tp.batch, 8.0
    )
    assert tp.comm == pytest.approx(decode_only * (1 + 9429 / 652), rel=1e-9)
    assert not cases["mlperf_h200_x8_llama2_70b_offline"].comm.any()


def test_shares_raise_and_overheads_lower_every_prediction(study):
    stack = predict.Stack.of([c for c in study["cases"] if c.kind != "none"])
    p = dict(study["model"].params)
    base = stack.predict(p)
    for name in predict.SHARES:
        higher = stack.predict({**p, name: min(1.0, p[name] * 1.2)})
        assert (higher >= base * (1 - 1e-12)).all(), name
    for name in predict.ROWS + predict.TIMES:
        slower = stack.predict({**p, name: p[name] * 3 + 1e-6})
        assert (slower <= base * (1 + 1e-12)).all(), name


def test_an_expert_row_of_gpt_oss_on_one_b300_by_hand(study):
    """One more token row through every routed expert of gpt-oss-120b, by hand from its config
    (openai/gpt-oss-120b config.json: 36 layers, 128 local experts, hidden and intermediate
    size 2,880, a gated MLP of three matrices): 36 x 128 x 3 x 2,880^2 = 114,661,785,600
    parameters at 2 FLOP each, on one B300 at its dense FP8 rate (4.5 PFLOP/s: the TRTLLM MoE
    backend's MXFP8 activations). At 896 sequences every expert is touched."""
    c = {c.id: c for c in study["cases"]}["mlperf61_b300_x8_gptoss_offline"]
    routed = 36 * 128 * 3 * 2880**2
    assert routed == 114_661_785_600
    assert c.expert[-1] == pytest.approx(2 * routed / 4.5e15, rel=1e-9)  # 51 us a row
    # a dense model's step has no experts to pad
    assert not {c.id: c for c in study["cases"]}["mlperf_h200_x8_llama2_70b_offline"].expert.any()


@settings(max_examples=25, deadline=None)
@given(
    model=st.sampled_from(["gpt_oss_120b", "deepseek_r1", "mixtral_8x7b"]),
    tokens=st.floats(1.0, 1e5),
    chips=st.sampled_from([1, 4, 8, 72]),
)
def test_expert_rows_cost_rows_over_m_of_the_routed_matmuls(model, tokens, chips):
    """Over serving batches: one row per touched expert never exceeds one row through every
    expert, grows with the batch, and once a batch touches every expert (M = tokens k / E_r
    tokens each), expert_rows rows cost expert_rows / M of the routed experts' matmul time
    (tokens x k x 2 FLOP x each expert's parameters), so the matmuls run at M / (M + rows)."""
    from units import Q_

    presets = load()
    m = presets.get("model", model)
    kw = {
        "model": model,
        "hardware": "b200",
        "presets": presets,
        "precision": "fp8",
        "weight_precision": "fp8",
        "compute_precision": "fp8",
        "kv_precision": "fp8",
        "flops": presets.get("hardware", "b200").dense_flops_fp8,
        "n_chips": Q_(chips, "chip"),
    }
    one = predict._expert_row(kw, Q_(np.array([tokens, 2 * tokens, 1e9]), "sequence"))
    assert 0 < one[0] <= one[1] <= one[2] * (1 + 1e-12)
    per_expert = predict._expert_row(kw, Q_(np.array([1e9]), "sequence"))[0] / m.experts_routed
    k, e = m.experts_active, m.experts_routed
    matmul = tokens * k * per_expert  # the step's routed matmuls at the peak
    m_tokens = tokens * k / e
    assert one[2] * m_tokens == pytest.approx(matmul, rel=1e-9)
    # at one token only its k experts are touched
    single = predict._expert_row(kw, Q_(np.array([1.0]), "sequence"))[0]
    assert single == pytest.approx(k * per_expert, rel=1e-9)


def test_expert_rows_slow_only_an_moe(study):
    """More rows per expert leave every dense row's prediction as it was and slow gpt-oss-120b's
    (28 tokens per expert at 896 sequences: its expert matmuls are where the rows bite)."""
    cases = [c for c in study["cases"] if c.kind == "rate"]
    stack = predict.Stack.of(cases)
    p = dict(study["model"].params)
    base, more = stack.predict(p), stack.predict({**p, "expert_rows": p["expert_rows"] * 4})
    for c, b, m in zip(cases, base, more, strict=True):
        if not c.moe:
            assert m == pytest.approx(b, rel=1e-12), c.id
        if c.id == "mlperf61_b300_x8_gptoss_offline":
            assert m < b * 0.9


def test_errors_are_ratios_either_way():
    e = predict.errors([(2.0, 1.0), (1.0, 2.0), (1.0, 1.0)])  # x2 over, x2 under, exact
    assert e["median"] == 2.0 and e["worst"] == 2.0 and e["within_1_5"] == pytest.approx(1 / 3)


def test_validate_json_rows_carry_an_honest_prediction():
    code, out, _ = run("validate", "--json")
    data = json.loads(out)
    assert code == 0
    for r in data["rows"]:
        if r["efficiency"] is None:
            continue
        assert r["predicted"] > 0 and r["predicted"] <= r["bound"] * (1 + 1e-9), r["id"]
        assert r["predicted_how"]
    loo = data["prediction"]["leave_one_out"]
    assert loo["count"] >= 40 and 1 <= loo["median"] <= loo["worst"]
    assert data["prediction"]["held_out"]["count"] >= 5
    assert data["prediction"]["not_modelled"]["count"] >= 8
    how = {r["id"]: r["predicted_how"] for r in data["rows"]}
    assert how["inferencex_mi355x_llama33_fp8_96"].startswith("not in the fit")


def test_predict_gives_a_prediction_below_the_bound_with_its_error():
    code, out, err = run(
        "predict", "--hardware", "h200", "--model", "llama_2_70b", "--precision", "fp8",
        "--input", "1000", "--output", "200", "--json",
    )  # fmt: skip
    assert code == 0 and err == ""
    p = json.loads(out)
    assert 0 < p["low"] < p["predicted"] <= p["high"] <= p["bound"]
    # an H200 cannot serve Llama 2 70B faster than its 141 GB / 4.8 TB/s and 1,979 TFLOP/s allow
    assert p["bound"] < 4.8e12 / 69e9 * 700


@pytest.mark.parametrize(
    "change, message",
    [
        (("--hardware", "h2000"), "--hardware: unknown hardware preset 'h2000' (did you mean"),
        (("--model", "llama9"), "--model: unknown model preset"),
        (("--precision", "fp9"), "--precision: unknown precision preset"),
        (("--input", "1000 s"), "--input:"),
        (("--scenario", "servr"), "unknown scenario 'servr'"),
        (("--scenario", "server"), "needs --tpot"),
        (("--model", "llama_3_1_405b"), "--chips: the weights"),
    ],
)
def test_bad_predict_input_gets_one_error_line(change, message):
    args = {"--hardware": "h200", "--model": "llama_2_70b", "--precision": "fp8"}
    args.update({"--input": "1000", "--output": "200"})
    args[change[0]] = change[1]
    code, out, err = run("predict", *[w for kv in args.items() for w in kv])
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert "/tmp" not in err and "Traceback" not in err


def test_more_tpot_never_predicts_less():
    rates = []
    for tpot in ("20 ms", "40 ms", "80 ms"):
        p = predict.predict_scenario("b200", "llama_2_70b", "fp8", 1, "1000", "200", "server", tpot)
        rates.append(p["predicted"])
    assert np.all(np.diff(rates) >= 0)


def test_the_chapters_predict_example_runs_as_printed():
    import io
    import shlex

    from book.chapters.validation import PREDICT_EXAMPLE
    from book.cli import main

    out = io.StringIO()
    assert main(shlex.split(PREDICT_EXAMPLE)[1:], out=out) == 0
    assert "predicted" in out.getvalue() and "bound" in out.getvalue()


# -- what a practitioner knows before running: the engine's batch cap, speculative decoding ------


def _scenario(max_batch=None, **kw):
    args = dict(hardware="h200", model="llama_2_70b", precision="fp8", chips=1)
    args.update(input_tokens="100", output_tokens="1000")
    args.update(kw)
    return predict.predict_scenario(**args, max_batch=max_batch)


def test_a_batch_cap_above_what_fits_changes_nothing():
    free = _scenario()
    assert free["batch"] > 100  # Llama 2 70B at FP8 on one H200 holds hundreds of sequences
    capped = _scenario(max_batch=int(free["batch"] * 3))
    assert capped["predicted"] == free["predicted"] and capped["bound"] == free["bound"]
    assert capped["batch"] == free["batch"]


def test_halving_a_memory_bound_batch_costs_only_the_weight_amortisation(tmp_path):
    """At batch B a memory-bound step reads the weights once (W) and each sequence's KV cache
    (K each), both at the fitted share of HBM bandwidth, and pays the fixed per-layer time:
    T(B) = (W + B K) / eta_mem + L tau. Halving B multiplies the rate per chip by
    (1/2) T(B) / T(B/2): weights and overheads are amortised over half as many sequences.
    W and K are computed here from the model's shape, not by the code under test."""
    presets = load()
    model, chip = presets.get("model", "llama_2_70b"), presets.get("hardware", "h200")
    p = predict.fit_rows(presets).params
    bandwidth = chip.hbm_bandwidth.to("byte/s").m * p["memory"]
    weights = model.params_total.to("parameter").m * 1.0 / bandwidth  # FP8: one byte each
    context = 100 + 1000 / 2  # prompt plus half the output: the mean context of a generation
    kv_bytes = 2 * model.layers * model.n_kv_heads * model.d_model / model.n_heads * context
    kv = kv_bytes * 1.0 / bandwidth  # FP8 KV cache: one byte per value
    fixed = model.layers * p["layer_overhead"]

    def step(b):
        return weights + b * kv + fixed

    full, half = _scenario(max_batch=32), _scenario(max_batch=16)
    # memory-bound at both batches: the compute side (matmul, prefill, attention) is the smaller
    for m in (32, 16):
        c = predict.case(_row_of(tmp_path, m), load((str(tmp_path / "row.toml"),)))
        shares = p[c.fmt]
        compute = (c.matmul[-1] + c.prefill[-1] / p["prefill"]) / shares + c.attention[-1] / shares
        assert compute < c.memory[-1] / p["memory"], m
    expected = 0.5 * step(32) / step(16)
    assert half["predicted"] / full["predicted"] == pytest.approx(expected, rel=2e-3)
    assert 0.5 < expected < 1  # less than the halving a compute-bound step would show


def _row_of(tmp_path, max_batch):
    from book.validation import evaluate

    (tmp_path / "row.toml").write_text(
        "\n".join(
            [
                "[measurement.capped]",
                'name = "capped"',
                'source = "test"',
                'system = "1x H200"',
                'hardware = "h200"',
                "chips = 1",
                'model = "llama_2_70b"',
                'weights = "fp8"',
                'kv = "fp8"',
                'scenario = "offline"',
                'input_tokens = "100 token"',
                'output_tokens = "1000 token"',
                f'concurrency = "{max_batch} sequence"',
                'throughput_per_chip = "1 token/s"',
            ]
        )
        + "\n"
    )
    presets = load((str(tmp_path / "row.toml"),))
    return evaluate(presets.get("measurement", "capped"), presets)


SPECULATIVE = """[measurement.spec]
name = "spec"
source = "test"
system = "8x B200"
hardware = "b200"
chips = 8
model = "deepseek_r1"
weights = "fp4"
kv = "fp8"
scenario = "single_stream"
input_tokens = "1024 token"
output_tokens = "2048 token"
concurrency = "1 sequence"
per_user_rate = "100 token/s"
"""


def _speculative(tmp_path, draft=None, accepted=None):
    from book.validation import evaluate

    text = SPECULATIVE
    if draft is not None:
        text += f'draft_tokens = "{draft} token"\naccepted_tokens = "{accepted} token"\n'
    path = tmp_path / f"spec_{draft}_{accepted}.toml"  # one file each: presets load once a path
    path.write_text(text)
    presets = load((str(path),))
    r = evaluate(presets.get("measurement", "spec"), presets)
    return r, predict.case(r, presets)


def test_speculation_keeps_accepted_tokens_per_step_and_pays_for_the_verified(tmp_path):
    p = predict.fit_rows(load()).params
    plain_row, plain = _speculative(tmp_path)
    spec_row, spec = _speculative(tmp_path, 3, 2.82)
    # the bound: a tokens per step at no less than a one-token step's time
    assert spec_row.bound.m == pytest.approx(2.82 * plain_row.bound.m, rel=1e-9)
    # the prediction: more per user, but less than a times more (four tokens' FLOPs and experts,
    # three draft passes), and never above the bound
    gain = predict.predict_case(spec, p) / predict.predict_case(plain, p)
    assert 1 < gain < 2.82
    assert predict.predict_case(spec, p) <= spec_row.bound.m
    # the verified tokens cost the same whatever is accepted: the speed is linear in a
    # (single stream, its prompt share aside: compare two acceptances with the prompt removed)
    _, spec_low = _speculative(tmp_path, 3, 1.5)
    assert spec_low.matmul == pytest.approx(spec.matmul) and spec_low.memory == pytest.approx(
        spec.memory
    )
    # nothing accepted beyond the step's own token: slower than not speculating at all
    _, wasted = _speculative(tmp_path, 3, 1)
    assert predict.predict_case(wasted, p) < predict.predict_case(plain, p)


@pytest.mark.parametrize(
    "extra, message",
    [
        ('draft_tokens = "3 token"\n', "draft_tokens and accepted_tokens go together"),
        ('draft_tokens = "3 token"\naccepted_tokens = "4.5 token"\n', "accepted_tokens: expected"),
        ('draft_tokens = "2.5 token"\naccepted_tokens = "1 token"\n', "draft_tokens: expected"),
    ],
)
def test_a_speculation_that_cannot_be_is_one_error(tmp_path, extra, message):
    from units import ChalkboardError

    (tmp_path / "spec.toml").write_text(SPECULATIVE + extra)
    with pytest.raises(ChalkboardError, match=message):
        load((str(tmp_path / "spec.toml"),))


def test_the_held_out_rows_carry_their_published_batch_caps(study):
    cases = {c.id: c for c in study["cases"]}
    # gpt-oss-120b on one B300: NVIDIA's engine holds 896 sequences, not the ~10,900 that fit
    assert cases["mlperf61_b300_x8_gptoss_offline"].batch[-1] == 896
    # DeepSeek-R1: eight attention-data-parallel ranks of 1,024
    assert cases["mlperf61_gb300_x8_r1_offline"].batch[-1] == 8 * 1024


def test_predict_takes_the_engines_max_batch():
    code, out, err = run(
        "predict", "--hardware", "h200", "--model", "llama_2_70b", "--precision", "fp8",
        "--input", "1000", "--output", "200", "--max-batch", "64", "--json",
    )  # fmt: skip
    assert code == 0 and err == ""
    assert json.loads(out)["batch"] == 64
    code, out, err = run(
        "predict", "--hardware", "h200", "--model", "llama_2_70b", "--precision", "fp8",
        "--input", "1000", "--output", "200", "--max-batch", "0",
    )  # fmt: skip
    assert code == 2 and err.startswith("error: --max-batch") and err.count("\n") == 1


# -- robustness: the bootstrap's ranges and the ablation's mechanisms -----------------------------


def test_the_bootstrap_is_seeded_and_reproducible(study):
    # a dozen fitted rows keep it quick; the same seed draws the same rows and the same ranges
    rows, model = study["fitted"][:12], study["model"]
    once = predict.bootstrap(rows, model, resamples=4, seed=7)
    assert predict.bootstrap(rows, model, resamples=4, seed=7) == once
    assert predict.bootstrap(rows, model, resamples=4, seed=8) != once
    assert set(once) == set(predict.PARAMS)
    for name, b in once.items():
        assert b["low"] <= b["high"], name
        if name in predict.SHARES:
            assert b["low"] > 0 and b["high"] <= 1, name


def test_every_mechanism_of_the_ablation_switches_something_off(study):
    z = study["model"].z
    full = predict._unpack(z)
    for name, (words, spec) in predict.MECHANISMS.items():
        # chip_rates: each chip's measured matmul rate over the H100's (predict.matmul_rate), a
        # switch in the parameters like communication, not a fitted number
        known = {*predict.PARAMS, "format", "communication", "priors", "sequence_overhead"}
        known |= {"chip_rates"}
        assert words and name in known, name
        if name == "priors":  # the fit's pull toward the microbenchmarks, not a parameter
            assert not spec.priors and all(s.priors for n, (_, s) in predict.MECHANISMS.items()
                                           if n != "priors")  # fmt: skip
            continue
        off = predict._unpack(z, spec)
        changed = {k for k in off if off[k] != full.get(k, 1.0)}
        assert changed, name  # a mechanism that changes no parameter is not switched off
    # the format mechanism ties the three shares to one
    tied = predict._unpack(z, predict.MECHANISMS["format"][1])
    assert tied["fp4"] == tied["fp8"] == tied["bf16"]
    # switching the links off lowers every step's time, so no prediction falls
    stack = predict.Stack.of(study["fitted"])
    free = stack.predict({**full, "communication": 0.0})
    assert (free >= stack.predict(full) * (1 - 1e-12)).all()
    # every chip at the H100's measured share: no chip is measured above it, so none falls
    rated = stack.predict({**full, "chip_rates": 0.0})
    assert (rated >= stack.predict(full) * (1 - 1e-12)).all()


def test_validate_json_reports_the_bootstrap_and_the_ablation():
    code, out, _ = run("validate", "--json")
    assert code == 0
    p = json.loads(out)["prediction"]
    assert set(p["ablation"]) == {"none", *predict.MECHANISMS}
    assert p["bootstrap_seed"] == predict.BOOTSTRAP_SEED
    assert set(p["bootstrap"]) == set(predict.PARAMS)
    # the ablation's full model is the leave-one-out the summary reports (the same refits)
    assert p["ablation"]["none"]["median"] == pytest.approx(p["leave_one_out"]["median"], rel=1e-3)
    for name, a in p["ablation"].items():
        assert 1 <= a["median"] <= a["worst"] and a["count"] == p["fitted"], name


def test_the_priors_are_sourced_microbenchmarks_and_pull_the_fit():
    presets = load()
    priors = predict.priors()
    assert set(priors) == {"bf16", "fp8", "memory"}  # FP4 has no measured share: free
    for name in (
        "achievable_matmul_h100_bf16",
        "achievable_matmul_h100_fp8",
        "achievable_hbm_h800",
        "achievable_matmul_a100_bf16",
        "achievable_matmul_mi300x_bf16",
    ):
        source = presets.get("parameter", name).source_of("value")
        assert " at " in source and ("ml-engineering" in source or "FlashMLA" in source), name
    # by hand from the sources: 794.5 of 989.4 TFLOP/s, 1402.6 of 1978.9, 3000 of 3350 GB/s
    assert priors["bf16"][0] == pytest.approx(794.5 / 989.4)
    assert priors["fp8"][0] == pytest.approx(1402.6 / 1978.9)
    assert priors["memory"][0] == pytest.approx(3000 / 3350)
    # the width: half the log-spread of A100's 271.2/312 against MI300X's 668.4/1307.4
    assert priors["bf16"][1] == pytest.approx(np.log((271.2 / 312) / (668.4 / 1307.4)) / 2)
    # a fit on rows that say nothing of memory or BF16 (FP8 and FP4 compute) lands on the prior
    # for those shares, and a fit without priors does not
    s = predict.study(presets)
    rows = [c for c in s["fitted"] if c.kind == "training"]
    with_prior = predict._unpack(predict.least_squares(rows, s["model"].z))
    assert with_prior["memory"] == pytest.approx(priors["memory"][0], rel=0.02)


def test_the_before_and_after_names_the_change_made_after_seeing_the_held_out_rows():
    code, out, _ = run("validate", "--json")
    comparison = json.loads(out)["prediction"]["comparison"]
    assert list(comparison) == [
        "before",
        "no_expert_rows",
        "no_host",
        "no_chip_rates",
        "adopted",
        *predict.POST_HOC,
    ]
    for name in ("no_expert_rows", "no_host", "no_chip_rates", *predict.POST_HOC):
        assert "after seeing the held-out rows" in comparison[name]["what"]
    for v in comparison.values():
        loo, held, both = v["leave_one_out"], v["held_out"], v["not_fitted"]
        assert both["count"] == loo["count"] + held["count"] and held["count"] >= 10
        assert (
            min(loo["median"], held["median"])
            <= both["median"]
            <= max(loo["median"], held["median"])
        )


# -- the fit's speed-ups compute the same numbers -------------------------------------------------


def test_the_jacobian_in_one_call_is_the_plain_finite_difference(study):
    """Column by column, each from its own nudged residuals (the textbook forward difference),
    against the one-call Jacobian and the fits' chunked one, at the fit and away from it, for the
    full model, a tied spec and one without priors."""
    stack = predict.Stack.of(study["fitted"])
    rng = np.random.default_rng(3)
    points = [study["model"].z, study["model"].z + rng.normal(0, 0.5, len(predict.PARAMS))]
    specs = [predict.FULL, predict.MECHANISMS["format"][1], predict.MECHANISMS["priors"][1]]
    for spec in specs:
        for z in points:
            r = predict._residuals(z, stack, spec)
            plain = np.empty((len(r), len(z)))
            for j in range(len(z)):
                dz = np.zeros_like(z)
                dz[j] = 1e-5
                plain[:, j] = (predict._residuals(z + dz, stack, spec) - r) / 1e-5
            assert np.abs(plain).max() > 0.1  # the rows do depend on the numbers
            np.testing.assert_allclose(
                predict.jacobian(z, stack, spec), plain, rtol=1e-9, atol=1e-9
            )
            rows = np.arange(len(stack.cases))[None]
            chunked = predict._jacobians(z[None], r[None], stack, spec, rows)[0]
            np.testing.assert_allclose(chunked, plain, rtol=1e-9, atol=1e-9)
    # a number the spec ties or fixes does not move the residuals: its column is zero
    tied = predict.jacobian(points[1], stack, predict.MECHANISMS["format"][1])
    assert not tied[:, [predict.PARAMS.index("fp4"), predict.PARAMS.index("bf16")]].any()


def test_the_jacobians_row_by_row_are_the_whole_ones_number_for_number(study, monkeypatch):
    """Many points' Jacobians are made a number at a time on the rows its nudge can move
    (_sparse_jacobians); a few points' in one call on every row. The two are the same numbers,
    bit for bit: at points near the fit and far from it (rows whose batch search moves), for
    the full model, a tied spec, one without priors and a batch of specs side by side (Specs,
    one of them without priors: zeros in the priors' places), on leave-one-out rows and on
    resampled rows."""
    stack = predict.Stack.of(study["fitted"])
    n = len(stack.cases)
    rng = np.random.default_rng(11)
    z0 = study["model"].z
    points = np.concatenate(
        [z0 + rng.normal(0, 0.01, (6, len(z0))), z0 + rng.normal(0, 0.7, (6, len(z0)))]
    )
    others = np.array([[j for j in range(n) if j != i] for i in range(len(points))])
    resampled = rng.integers(0, n, (len(points), n - 1))
    mixed = predict.Specs(
        tuple(predict.MECHANISMS[k][1] for k in ("format", "memory", "latency", "priors")) * 3
    )
    specs = [predict.FULL, predict.MECHANISMS["format"][1], predict.MECHANISMS["priors"][1]]
    for spec in [*specs, mixed]:
        for rows in (others, resampled):
            reach: list = []
            r = predict._residuals(points, stack, spec, rows, reach=reach)
            for near in (None, reach[0]):
                monkeypatch.setattr(predict, "SPARSE", 10**9)
                whole = predict._jacobians(points, r, stack, spec, rows, near)
                monkeypatch.setattr(predict, "SPARSE", 1)
                sparse = predict._jacobians(points, r, stack, spec, rows, near)
                assert np.abs(whole).max() > 0.1
                assert np.array_equal(whole, sparse)


def test_fits_on_fewer_rows_beside_longer_ones_are_each_fit_alone(study, monkeypatch):
    """Folds that leave out different numbers of rows fit side by side, a shorter fold's rows
    ending in -1 (zeros in those places, _layouts), with priors and without, each with its own
    number of steps: each fit ends where it ends alone, bit for bit, and so does its loss; with
    the Jacobians made whole and row by row (SPARSE)."""
    stack = predict.Stack.of(study["fitted"])
    n = len(stack.cases)
    start = study["model"].z + 0.05  # off the valley's floor: every fit moves
    drops = ([0], [1, 2], [3, 4, 5], [6], [7, 8])
    rest = [[j for j in range(n) if j not in d] for d in drops]
    rows = np.array([r + [-1] * (n - 1 - len(r)) for r in rest])
    free = predict.MECHANISMS["priors"][1]
    specs = predict.Specs((predict.FULL, free, predict.FULL, free, predict.FULL))
    for sparse in (10**9, 1):
        monkeypatch.setattr(predict, "SPARSE", sparse)
        steps = [6, 3, 6, 2, 5]
        zs, cost = predict._fits(stack, np.tile(start, (len(rest), 1)), rows, steps, specs)
        for k, r in enumerate(rest):
            alone, own = predict._fits(stack, start[None], np.array([r]), steps[k], specs.each[k])
            assert np.array_equal(zs[k], alone[0]), (sparse, k)
            assert cost[k] == own[0], (sparse, k)


def test_trying_dampings_together_is_trying_them_in_turn(study, monkeypatch):
    """A fit whose trial fails tries the next dampings at once (SPECULATE): every fit ends
    where trying one damping at a time ends it, bit for bit."""
    stack = predict.Stack.of(study["fitted"])
    n = len(stack.cases)
    starts = np.array([study["model"].z, predict.START, predict.START + 0.3])
    rows = np.tile(np.arange(n), (len(starts), 1))
    monkeypatch.setattr(predict, "SPECULATE", 1)
    alone = predict._fits(stack, starts, rows, 25)
    monkeypatch.setattr(predict, "SPECULATE", 8)
    together = predict._fits(stack, starts, rows, 25)
    for a, b in zip(alone, together, strict=True):
        assert np.array_equal(a, b)


def test_fits_split_with_a_forked_copy_are_the_fits_of_one_process(study):
    """Where a reader waits (book.parallel.wanted), a run of fits is split in two halves, the
    second fitted in a forked copy: every fit ends where the run in one process ends it, bit
    for bit, under mixed specs (the ablation's folds) and from scattered starts."""
    from book import parallel

    stack = predict.Stack.of(study["fitted"])
    n = len(stack.cases)
    rng = np.random.default_rng(3)
    z0 = study["model"].z
    starts = np.concatenate(
        [z0 + rng.normal(0, 0.01, (5, len(z0))), np.tile(predict.START, (6, 1))]
    )
    others = np.array([[j for j in range(n) if j != i] for i in range(len(starts))])
    mixed = predict.Specs(
        (predict.FULL, predict.MECHANISMS["format"][1], predict.MECHANISMS["latency"][1]) * 3
        + (predict.FULL, predict.FULL)
    )
    assert len(starts) >= predict.SPLIT
    for spec in (predict.FULL, mixed):
        one = predict._fits(stack, starts, others, 12, spec)
        with parallel.wanted():
            pids = parallel.halves(lambda part: (np.full(3, os.getpid()),), 6)[0]
            assert len(set(pids)) == 2  # a copy does run here
            split = predict._fits(stack, starts, others, 12, spec)
        assert np.abs(one[0] - starts).max() > 1e-3  # the fits moved
        for a, b in zip(one, split, strict=True):
            assert a.tobytes() == b.tobytes()


def test_a_latency_limited_batch_is_the_one_the_whole_grid_finds(study):
    """The prediction searches a TPOT-limited row's batch among every 16th batch, then within
    one block. Brute force here: the step at every batch of the grid (from the same row without
    its limit, cut at that batch: rate = B a / (n T)), the last batch whose step meets the limit,
    the step linear in the batch up to the next one."""
    limited = [c for c in study["fitted"] if c.target is not None and len(c.batch) > 1]
    assert len(limited) >= 10
    rng = np.random.default_rng(5)
    for z in (study["model"].z, study["model"].z + rng.normal(0, 0.7, len(predict.PARAMS))):
        p = predict._unpack(z)
        for c in limited[::3]:
            steps = []
            for j in range(len(c.batch)):
                cut = {
                    k: getattr(c, k)[: j + 1]
                    for k in ("batch", "matmul", "prefill", "attention", "memory", "expert", "comm")
                }
                free = predict.Case(**{**c.__dict__, **cut, "target": None})
                rate = predict.predict_case(free, p)
                steps.append(c.batch[j] * c.accepted / (c.chips * rate))
            steps, limit = np.array(steps), c.target * p["latency"]
            meets = np.flatnonzero(steps <= limit)
            if not len(meets):
                expected = c.batch[0] * c.accepted / (c.chips * steps[0])
            elif meets[-1] == len(steps) - 1:
                expected = c.batch[-1] * c.accepted / (c.chips * steps[-1])
            else:
                i = meets[-1]
                share = (limit - steps[i]) / (steps[i + 1] - steps[i])
                batch = c.batch[i] + share * (c.batch[i + 1] - c.batch[i])
                expected = batch * c.accepted / (c.chips * limit)
            assert predict.predict_case(c, p) == pytest.approx(expected, rel=1e-9), c.id


def test_fits_side_by_side_are_each_fit_alone(study):
    """The leave-one-out fits step together; each is the single fit without its row, number
    for number, on every seventh row (the existing test checks one at 1e-9)."""
    fitted, z = study["fitted"], study["model"].z
    for i in range(0, len(fitted), 7):
        others = fitted[:i] + fitted[i + 1 :]
        alone = predict.least_squares(others, z, iterations=20)
        value = predict.predict_case(fitted[i], predict._unpack(alone))
        assert value == pytest.approx(study["loo"][fitted[i].id], rel=1e-12), fitted[i].id
    # a variant's leave-one-out too (a share held at the peak, eight steps from its own fit)
    spec = predict.MECHANISMS["memory"][1]
    zv = predict._refit(fitted, (z, predict.START), spec)
    loo = predict.leave_one_out(fitted[:15], zv, spec, predict.VARIANT_ITERATIONS)
    for i in (0, 7, 14):
        others = fitted[:i] + fitted[i + 1 : 15]
        alone = predict.least_squares(others, zv, predict.VARIANT_ITERATIONS, spec)
        value = predict.predict_case(fitted[i], predict._unpack(alone, spec))
        assert value == pytest.approx(loo[fitted[i].id], rel=1e-12), fitted[i].id


def test_variants_refitted_side_by_side_are_each_refit_alone(study):
    """The ablation refits its variants in one run, each fit under its own spec (Specs): each is
    the variant refitted alone (_refit), number for number, with a tie, fixed numbers that
    predict reads apart (the chip rates, the links' bytes), the free model and the variant
    without priors among them (its residuals zeros in the priors' places, its loss its rows')."""
    fitted, z = study["fitted"][:20], study["model"].z
    names = ("format", "chip_rates", "memory", "communication", "priors")
    specs = [predict.FULL] + [predict.MECHANISMS[name][1] for name in names]
    together = predict._refits(fitted, (z, predict.START), specs)
    for spec, got in zip(specs, together, strict=True):
        alone = predict._refit(fitted, (z, predict.START), spec)
        np.testing.assert_array_equal(got, alone)
    # and their leave-one-out folds, every variant's side by side: each variant's alone
    picked = [0, 1, 2, 5]  # the free model, a tie, a number predict reads apart, no priors
    folds = predict._leave_one_outs(
        fitted, [together[k] for k in picked], [specs[k] for k in picked], 8
    )
    for k, got in zip(picked, folds, strict=True):
        assert got == predict.leave_one_out(fitted, together[k], specs[k], 8)


def test_the_latency_search_from_a_nearby_batch_is_the_whole_search(study):
    """Stack.predict's ``near`` (the Jacobian's nudged sets start where the fit's own search
    ended): from the right index, from indices a few batches off either way, and from none
    (-1), every prediction equals the whole search's, and so does the index it reaches."""
    stack = predict.Stack.of(study["fitted"])
    z = study["model"].z + 0.05 * np.random.default_rng(3).standard_normal((6, 11))
    p = predict._unpack(z)
    reach: list = []
    whole = stack.predict(p, reach=reach)
    assert len(stack.arrays["limited"]) and (reach[0] > 3).any()  # farther than a walk goes
    for shift in (0, -2, 2, -1, 1):
        found: list = []
        near = np.clip(reach[0] + shift, -1, None)
        np.testing.assert_array_equal(stack.predict(p, reach=found, near=near), whole)
        np.testing.assert_array_equal(found[0], reach[0])
    # too far to walk: the sets still walking are searched whole, the others kept, the same
    # figures, indices and unmet flags; with the sets along two axes, all searched whole
    unmet: list = []
    stack.predict(p, unmet=unmet)
    for far in (np.full_like(reach[0], -1), np.full_like(reach[0], -1)[:, None]):
        found, flags = [], []
        lead = {
            k: v if np.ndim(v) == 0 else np.reshape(v, np.shape(far)[:-1]) for k, v in p.items()
        }
        got = stack.predict(lead, unmet=flags, reach=found, near=far)
        np.testing.assert_array_equal(got.reshape(whole.shape), whole)
        np.testing.assert_array_equal(found[0].reshape(reach[0].shape), reach[0])
        np.testing.assert_array_equal(flags[0].reshape(unmet[0].shape), unmet[0])


def test_the_bootstrap_is_its_definition_refit_by_refit(study):
    """Each resample refitted alone from the full fit and from the default start, the lower loss
    kept, then the 10th and 90th percentiles: the side-by-side bootstrap gives the same."""
    rows, model = study["fitted"][:12], study["model"]
    rng = np.random.default_rng(11)
    draws = []
    for _ in range(5):
        sample = [rows[i] for i in rng.integers(0, len(rows), len(rows))]
        fits = [predict.least_squares(sample, z0) for z0 in (model.z, predict.START)]
        losses = [float(np.sum(predict._residuals(z, sample) ** 2)) for z in fits]
        draws.append(predict._unpack(fits[int(losses[1] < losses[0])]))
    got = predict.bootstrap(rows, model, resamples=5, seed=11)
    for name in predict.PARAMS:
        values = [d[name] for d in draws]
        assert got[name]["low"] == pytest.approx(np.percentile(values, 10), rel=1e-9), name
        assert got[name]["high"] == pytest.approx(np.percentile(values, 90), rel=1e-9), name


def test_warm_started_leave_one_out_reaches_the_cold_fits_valley(study):
    """A row's leave-one-out fit starts from the fit on every row; started cold from the nine
    starts of a fit instead (lowest loss kept), every tenth row's prediction agrees within
    1e-4 (measured: within 2e-6 on the presets): the warm start finds the same valley."""
    fitted, n = study["fitted"], len(study["fitted"])
    stack = predict.Stack.of(fitted)
    picked = list(range(0, n, 10))
    starts = np.tile(predict.START, (9, 1))
    starts[:, -2:] = np.log([(a, b) for a in predict.START_TIMES for b in predict.START_TIMES])
    others = np.array([[j for j in range(n) if j != i] for i in picked])
    zs, loss = predict._fits(stack, np.repeat(starts, len(picked), 0), np.tile(others, (9, 1)))
    best = np.argmin(loss.reshape(9, len(picked)), axis=0)
    for k, i in enumerate(picked):
        cold = predict.predict_case(fitted[i], predict._unpack(zs[best[k] * len(picked) + k]))
        assert cold == pytest.approx(study["loo"][fitted[i].id], rel=1e-4), fitted[i].id


# -- the host's cost per sequence (post-hoc) and the rows no batch serves in time -------------

PLAIN = {
    "fp4": 1.0,
    "fp8": 1.0,
    "bf16": 1.0,
    "memory": 1.0,
    "prefill": 1.0,
    "expert_parallel": 1.0,
    "latency": 1.0,
    "training": 1.0,
    "expert_rows": 0.0,
    "layer_overhead": 0.0,
    "collective": 0.0,
}


def one_step_case(**kw):
    """A replica of 2 chips, 100 sequences, a 1 ms step of matmuls and nothing else."""
    base = dict(
        id="hand",
        scenario="offline",
        measured=1.0,
        bound=1e9,
        kind="rate",
        fmt="bf16",
        attn_fmt="bf16",
        batch=np.array([100.0]),
        matmul=np.array([1e-3]),
        chips=2.0,
    )
    return predict.Case(**{**base, **kw})


def test_a_host_cost_per_sequence_by_hand():
    """By hand: 100 sequences on 2 chips. Tensor parallelism: each rank's process walks all
    100; at 50 us a sequence the host takes 5 ms, longer than the chips' 1 ms: 100 tokens /
    (2 chips x 5 ms) = 10,000 token/s per chip. Attention data parallelism (an MoE spread over
    the chips): 50 each, 2.5 ms, 20,000 (1 / 50 us, whatever the batch). At 5 us (0.5 ms) the
    host hides under the chips' step (an overlap scheduler): 100 / (2 x 1 ms) = 50,000."""
    tp, dp = one_step_case(), one_step_case(expert_parallel=True, moe=True)
    assert predict.predict_case(tp, {**PLAIN, "sequence_overhead": 50e-6}) == pytest.approx(10_000)
    assert predict.predict_case(dp, {**PLAIN, "sequence_overhead": 50e-6}) == pytest.approx(20_000)
    for c in (tp, dp):
        assert predict.predict_case(c, {**PLAIN, "sequence_overhead": 5e-6}) == pytest.approx(5e4)
        assert predict.predict_case(c, PLAIN) == pytest.approx(50_000)  # none given: none


def test_the_host_time_per_sequence_is_the_sourced_host_step_over_its_batch(study):
    """By hand from the source (TensorRT-LLM PR 10273): 45.11 ms a host step at 1,536
    sequences a rank is 29.37 us a sequence. The adopted model charges it unfitted; no row
    the model is fitted on or tested against makes more than 1 / tau tokens per second per
    host process (a row that did would refute it), while the post-hoc 79 us is refuted by a
    fitted row: Llama 3.1 8B on one B200 makes 17,094 token/s per chip, 1 / 17,094 = 59 us."""
    presets = load()
    tau = predict.host_prior()
    assert tau == pytest.approx(45.11e-3 / 1536)
    source = presets.get("parameter", "host_step_time_gpt_oss_gb200").source_of("value")
    assert "TensorRT-LLM/pull/10273" in source and "host_step_time is 45.11 ms" in source
    assert study["model"].params["sequence_overhead"] == tau
    assert predict._unpack(study["model"].z, predict.MECHANISMS["sequence_overhead"][1])[
        "sequence_overhead"
    ] == 0.0  # fmt: skip
    one_host = [c for c in study["cases"] if c.kind == "rate" and c.chips == 1 and c.accepted == 1]
    assert len(one_host) >= 20
    assert max(c.measured for c in one_host) < 1 / tau
    assert max(c.measured for c in one_host) > 1 / predict.host_per_sequence(study["cases"])


@settings(max_examples=25, deadline=None)
@given(tau=st.floats(1e-7, 3e-4))
def test_a_host_cost_never_raises_a_prediction_and_caps_a_chip_at_a_over_tau(study, tau):
    """On every row: a host cost lowers or keeps each prediction, and a chip whose process
    handles its share of the sequences makes at most a / tau tokens per second (a tokens kept
    per sequence per step); none of it touches a training row."""
    cases = [c for c in study["cases"] if c.kind != "none"]
    stack = predict.Stack.of(cases)
    p = {**study["model"].params, "sequence_overhead": 0.0}  # against no host cost at all
    base, host = stack.predict(p), stack.predict({**p, "sequence_overhead": tau})
    for c, b, h in zip(cases, base, host, strict=True):
        assert h <= b * (1 + 1e-12), c.id
        if c.kind == "rate":
            assert h <= c.accepted / tau * (1 + 1e-9), c.id
        if c.kind == "training":
            assert h == b, c.id


def test_the_post_hoc_host_cost_is_one_over_the_gpt_oss_rows_median_rate(study):
    """Independently of the code: the held-out gpt-oss-120b rows' published tokens/s per chip
    (one replica per chip), their median, one over it."""
    from book.validation import validate

    rates = [
        r.measured.to("token/s/chip").m
        for r in validate(load())
        if r.preset.model == "gpt_oss_120b" and str(r.preset.get("date", "")) >= "2026"
    ]
    assert len(rates) >= 4
    tau = predict.host_per_sequence(study["cases"])
    assert tau == pytest.approx(1 / float(np.median(rates)), rel=1e-12)
    assert 50e-6 < tau < 120e-6  # the ~60-85 us the rows' flat rates suggested


def test_a_target_no_batch_meets_is_flagged_and_predicted_at_one_sequence():
    """By hand: 10 layers of 200 us fixed cost are 2 ms, longer than a 1.5 ms target: no batch
    meets it; the prediction is one sequence at 2 ms plus its matmuls (1 us a sequence here):
    1 / (2 chips x 2.001 ms) = 249.9 token/s per chip, flagged. A 5 ms target is met."""
    grid = np.geomspace(1, 100, 40)
    c = one_step_case(batch=grid, matmul=grid * 1e-6, layers=10.0, target=1.5e-3)
    p = {**PLAIN, "layer_overhead": 200e-6}
    unmet: list = []
    value = float(predict.Stack.of([c]).predict(p, unmet=unmet)[0])
    assert bool(unmet[0][0])
    assert value == pytest.approx(1 / (2 * 2.001e-3))
    met: list = []
    predict.Stack.of([predict.Case(**{**c.__dict__, "target": 5e-3})]).predict(p, unmet=met)
    assert not met[0][0]


@settings(max_examples=30, deadline=None)
@given(target=st.floats(1e-4, 1e-2), overhead=st.floats(1e-6, 5e-4))
def test_unmet_is_exactly_a_smallest_step_longer_than_the_target(target, overhead):
    grid = np.geomspace(1, 100, 40)
    c = one_step_case(batch=grid, matmul=grid * 1e-6, layers=10.0, target=target)
    unmet: list = []
    predict.Stack.of([c]).predict({**PLAIN, "layer_overhead": overhead}, unmet=unmet)
    smallest = 10 * overhead + 1e-6  # the step at one sequence
    if abs(smallest - target) > 1e-9 * target:
        assert bool(unmet[0][0]) == (smallest > target)


def test_the_rows_flagged_unmet_are_those_whose_fixed_cost_outlasts_their_target(study):
    """validate --json names the rows no batch serves in time; each has a fitted fixed cost
    per step (the chapter's fixed_cost, computed apart) at least the step its target allows."""
    from book.chapters.validation import fixed_cost

    code, out, _ = run("validate", "--json")
    data = json.loads(out)
    flagged = {r["id"] for r in data["rows"] if r["unmet_target"]}
    assert flagged == set(data["prediction"]["unmet"]) and flagged
    presets = load()
    params = study["model"].params
    for r in data["rows"]:
        if r["id"] in flagged and r["id"] not in study["loo"]:
            f = fixed_cost(presets.get("measurement", r["id"]), presets, params)
            assert f["fixed"] >= f["allowed"] * 0.999, r["id"]
    # the rows kept out of the fit and not flagged are reported with their own error
    met = data["prediction"]["not_modelled_met"]
    assert met["count"] == data["prediction"]["not_modelled"]["count"] - len(
        flagged - set(study["loo"])
    )


def test_predict_warns_when_no_batch_meets_the_tpot():
    """80 layers at the fitted fixed cost (about 0.13 ms each) take about 10 ms: an 8 ms TPOT
    is met by no batch; 40 ms is."""
    argv = ["predict", "--hardware", "b200", "--model", "llama_3_3_70b", "--precision", "fp8"]
    argv += ["--chips", "8", "--input", "1000", "--output", "1000", "--scenario", "interactive"]
    code, out, _ = run(*argv, "--tpot", "8ms")
    assert code == 0 and "no batch meets the --tpot" in out and "expected" not in out
    code, out, _ = run(*argv, "--tpot", "8ms", "--json")
    assert json.loads(out)["unmet"] is True
    code, out, _ = run(*argv, "--tpot", "40ms", "--json")
    assert json.loads(out)["unmet"] is False


def test_leave_one_submission_out_holds_every_row_of_a_submission_out_together(study):
    """The honest score for a system the fit has not seen: each row is predicted by a fit
    without every row of its submission (a source's system). Checked against a fit made here
    without the largest submission's rows; a submission of one row is its leave-one-out."""
    fitted, z = study["fitted"], study["model"].z
    groups: dict = {}
    for c in fitted:
        groups.setdefault(c.submission, []).append(c)
    assert all(c.submission for c in fitted) and len(groups) < len(fitted)
    largest = max(groups.values(), key=len)
    assert len(largest) >= 3  # an MLPerf system's scenarios, published together
    others = [c for c in fitted if c.submission != largest[0].submission]
    alone = predict._unpack(predict.least_squares(others, z, iterations=60))
    for c in largest:
        assert study["loso"][c.id] == pytest.approx(predict.predict_case(c, alone), rel=1e-9)
    single = next(g[0] for g in groups.values() if len(g) == 1)
    assert study["loso"][single.id] == pytest.approx(study["loo"][single.id], rel=1e-9)


def test_a_held_out_submission_lands_where_a_fit_that_never_saw_it_lands(study):
    """Each fold starts from the fit on all rows, the held-out rows included; run to the end,
    it must land where ``fit`` lands from its own starts on the other rows alone, so the
    starting point carries nothing of the held-out system. Checked on the submission whose
    fold moves most (8x B200 R1 at batch 1, min-latency: at 20 steps it stopped 4% short) and
    on the largest one."""
    fitted, z = study["fitted"], study["model"].z
    groups: dict = {}
    for c in fitted:
        groups.setdefault(c.submission, []).append(c)
    slow = next(s for s in groups if "min-latency" in s and len(groups[s]) >= 3)
    for held in (slow, max(groups, key=lambda s: len(groups[s]))):
        cold = predict.fit([c for c in fitted if c.submission != held]).params
        for c in groups[held]:
            assert study["loso"][c.id] == pytest.approx(predict.predict_case(c, cold), rel=2e-3)
    short = predict.leave_one_submission_out(fitted, z, iterations=20)
    assert max(abs(short[c.id] / study["loso"][c.id] - 1) for c in groups[slow]) > 0.01


def test_every_measurement_names_its_engine_from_the_known_set(study):
    """Each built-in row states the serving engine (or training framework) its source names,
    one of units.presets.ENGINES, written in the row itself (not defaulted); the case carries
    it. Anchors read off measurements.md's Software column: AMD's MLPerf v5.1 rows run vLLM,
    NVIDIA's TensorRT(-LLM), the LMSYS blogs SGLang, the InferenceX pages (best of three
    engines) no one engine."""
    import tomllib
    from pathlib import Path

    from units.presets import DATA, ENGINES

    rows = tomllib.loads(Path(DATA / "measurements.toml").read_text())["measurement"]
    assert rows and all(row.get("engine") in ENGINES for row in rows.values())
    cases = {c.id: c for c in study["cases"]}
    assert all(cases[k].engine == row["engine"] for k, row in rows.items() if k in cases)
    assert rows["mlperf_mi300x_x8_llama2_70b_offline"]["engine"] == "vllm"
    assert rows["mlperf_b200_x8_llama2_70b_offline"]["engine"] == "tensorrt_llm"
    assert rows["sglang_h100_decode"]["engine"] == "sglang"
    assert rows["inferencex_b200_llama33_fp8_76"]["engine"] == "unknown"


def test_an_engine_outside_the_known_set_is_refused(tmp_path):
    from units import ChalkboardError

    row = own_row()
    path = tmp_path / "mine.toml"
    path.write_text(row.replace('engine = "vllm"', 'engine = "vlm"'))
    with pytest.raises(ChalkboardError, match="engine"):
        load((str(path),))
    path.write_text(row)
    assert load((str(path),)).get("measurement", "mine").get("engine") == "vllm"


def own_row() -> str:
    """A measurement row of one's own, on vLLM (a --presets file)."""
    return "\n".join(
        [
            "[measurement.mine]",
            'name = "mine"',
            'source = "me"',
            'system = "1x h100"',
            'engine = "vllm"',
            'hardware = "h100_sxm"',
            "chips = 1",
            'model = "llama_3_1_8b"',
            'weights = "bf16"',
            'activations = "bf16"',
            'kv = "bf16"',
            'scenario = "offline"',
            'input_tokens = "1000 token"',
            'output_tokens = "1000 token"',
            'throughput_per_chip = "1000 token/s"',
            "",
        ]
    )


def test_a_held_out_submission_never_informs_its_own_prediction(study):
    """Leave-one-submission-out: the held-out rows' measured figures enter no fit that predicts
    them. Their measured values multiplied by three leave their own predictions unchanged (to
    rounding), while the other submissions' predictions, whose fits now see the changed rows,
    move (so the check can fail)."""
    fitted, z = study["fitted"], study["model"].z
    groups: dict = {}
    for c in fitted:
        groups.setdefault(c.submission, []).append(c)
    held = max(groups.values(), key=len)[0].submission
    liars = [
        predict.Case(**{**c.__dict__, "measured": c.measured * 3}) if c.submission == held else c
        for c in fitted
    ]
    before = predict.leave_one_submission_out(fitted, z)
    after = predict.leave_one_submission_out(liars, z)
    own = [c.id for c in fitted if c.submission == held]
    rest = [c.id for c in fitted if c.submission != held]
    assert own and all(after[i] == pytest.approx(before[i], rel=1e-12) for i in own)
    assert max(abs(after[i] / before[i] - 1) for i in rest) > 1e-3


def test_a_chips_matmul_rate_is_its_measured_share_over_the_h100s():
    """Each chip's measured matmul rate for its peak over the H100's (MAMF's BF16 table, the
    parameters achievable_matmul_*): hand-computed from the table's rates and the hardware
    presets' dense BF16 peaks; a chip with no BF16 figure of its own is taken at the H100's."""
    presets = load()
    h100 = 794.5 / 989.4
    assert predict.matmul_rate(presets, "mi300x") == pytest.approx((668.4 / 1307.4) / h100)
    assert predict.matmul_rate(presets, "mi325x") == pytest.approx((784.9 / 1307.4) / h100)
    assert predict.matmul_rate(presets, "mi355x") == pytest.approx((1565 / 2500) / h100)
    assert predict.matmul_rate(presets, "gb200_nvl72") == pytest.approx((1822 / 2500) / h100)
    assert predict.matmul_rate(presets, "b200") == pytest.approx((1745 / 2250) / h100)
    for chip in ("h100_sxm", "h200", "h800", "tpu_v5e", "gb300_nvl72"):
        assert predict.matmul_rate(presets, chip) == 1.0
    # every case carries its chip's rate, and the prediction applies it to the matmul shares
    s = predict.study(presets)
    for c in s["cases"]:
        if c.kind != "none":
            hw = presets.get("measurement", c.id).hardware
            assert c.matmul_rate == predict.matmul_rate(presets, hw)
