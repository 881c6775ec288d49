"""The pipeline chapter's worked examples, each against a hand computation."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book.chapters import pipeline
from book.figures import FIGURES
from units.presets import load


@pytest.fixture(scope="module")
def ctx():
    return pipeline.context(load())


def test_kimi_k2_needs_two_stages_on_an_h100_node_and_its_kv_still_overflows(ctx):
    big = ctx["big"]
    # models.toml: Kimi K2 1e12 parameters, FP8 = 1 byte each, over one node's 8 H100s (80 GB)
    assert big["weights_one"] == "125 GB"  # 1e12 B / 8
    assert big["weights_two"] == "62.5 GB"  # 1e12 B / (8 x 2)
    assert big["left_two"] == "17.5 GB"  # 80 - 62.5
    # MLA KV per token at FP8: (kv_lora_rank 512 + rope 64) x 61 layers x 1 byte = 35,136 bytes;
    # the micro-batch that fits in 17.5 GB per chip over 8 chips at 8,192 tokens of context:
    # 17.5e9 x 8 / (8192 x 35136) = 486.4 sequences
    assert big["fits"] == "486 sequences"


def test_the_b200_exercise_gains_micro_batch_from_a_second_stage(ctx):
    b200 = ctx["ex"]["b200"]
    # 180 GB B200s: one stage leaves 55 GB, two leave 117.5 GB; x 8 / (8192 x 35136) each
    assert b200["left_one"] == "55 GB"
    assert b200["fits_one"] == "1,529 sequences"  # 55e9 x 8 / 287.8e6 = 1,528.6
    assert b200["fits"] == "3,266 sequences"  # 117.5e9 x 8 / 287.8e6 = 3,265.7


def test_traffic_ratio_with_the_lecture_s_and_the_rack_s_penalty(ctx):
    # lecture: 2 k / 8 with k = 8 routed experts is 2 per MoE layer; DeepSeek-V3 has 61 - 3 = 58
    # MoE layers, 14.5 per stage at 4 stages: 2 x 8 x 14.5 / 8 = 29
    assert ctx["ratio_one_layer"] == "2"
    assert ctx["ratio_default"] == "29"
    # GB200 NVL72: 900 GB/s NVLink per direction against 400 Gb/s = 50 GB/s: 18x
    assert ctx["rack_penalty"] == "18"
    assert ctx["ratio_rack_one_layer"] == "0.8889"  # 16 / 18
    assert ctx["rack_min_layers"] == "2 layers"  # ceil(18 / 16)


def test_hops_and_bubble_by_hand(ctx):
    assert ctx["latency"] == "30 ms"  # 20 ms + 4 x 2.5 ms (the lecture)
    assert ctx["latency_network"] == "20.4 ms"  # 20 ms + 4 x 100 us
    assert ctx["bubble_default"] == "15.8%"  # (4 - 1) / (16 + 4 - 1) = 3/19
    assert ctx["bubble_m_equal_p"] == "42.9%"  # 3/7
    assert ctx["ex"]["bubble_needed"] == "63"  # (8 - 1)(1 - 0.1)/0.1
    assert ctx["ex"]["double_lecture"] == "8 stages"  # 20 ms / 2.5 ms


def test_measured_hops_bound_what_four_hops_add(ctx):
    # Issue 22: DeepEP's low-latency kernels over InfiniBand (docs/legacy.md) take 77 us
    # (dispatch, EP 8) to 369 us (combine, EP 128); four hops against the lecture's 20 ms step:
    assert (ctx["hop_fast"], ctx["hop_slow"]) == ("77 µs", "369 µs")
    assert ctx["hops_added_fast"] == "0.31 ms"  # 4 x 77 us = 0.308 ms
    assert ctx["hops_added_slow"] == "1.5 ms"  # 4 x 369 us = 1.476 ms
    assert ctx["hop_share_fast"] == "1.5%"  # 0.308 / 20
    assert ctx["hop_share_slow"] == "7.4%"  # 1.476 / 20 = 7.38%
    assert ctx["hop_source"] == "deepseek-ai/DeepEP, docs/legacy.md"
    assert (ctx["hop_ratio_slow"], ctx["hop_ratio_fast"]) == ("6.8", "32")  # 2.5 ms / each
    assert ctx["ex"]["double_slow"] == "54 stages"  # 20 ms / 369 us = 54.2


def test_zero_3_over_deepseek_s_cluster_would_hold_its_state_in_a_few_gb(ctx):
    # 671e9 parameters x 16 bytes = 10.7 TB over 2,048 GPUs: 5.24 GB each (the reader's 5.2 GB)
    assert ctx["ds"]["state_sharded"] == "5.2 GB"
    assert ctx["ds"]["nvlink"] == "200 GB/s"  # hardware.toml: H800 NVLink per direction
    assert ctx["ds"]["network"] == "50 GB/s"  # 400 Gb/s


def test_kv_per_chip_is_the_same_at_every_stage_count(ctx):
    kv = {row["cells"][1] for row in ctx["stages"]["rows"]}
    assert len(kv) == 1
    assert ctx["two_share"] == "50%"  # two stages remove half of the weights


def test_training_recompute_saving(ctx):
    # Llama 3.1 70B's layer, counted by hand as the reversible chapter counts it: 2 bytes x
    # (4 d + 2 h d_h + 2 h_KV d_h + 4 d_ff) / d = 2 x (4 + 2 + 2/8 + 4 x 28,672/8,192) = 40.5
    # bytes per value stored without recompute, against 2 (the BF16 input): 20.25x, said "20"
    assert ctx["training"]["recompute_saving"] == "20"
    assert ctx["training"]["act_factor"] == "40.5 bytes per value"
    assert ctx["training"]["state_over_weights"] == "8"  # 16 bytes against 2


def test_memory_figure_shows_a_model_that_fits_and_one_that_overflows():
    fig = FIGURES["memory_vs_stages"](load())
    assert "Kimi K2" in fig.alt and "DeepSeek-V3" in fig.alt
    assert "overflows 80 GB" in fig.caption
    assert fig.svg.count('id="axes_') == 2 or fig.svg.count("axes_2") >= 1


def test_a_real_hop_moves_one_micro_batch_of_activations(ctx):
    # DeepSeek-V3 d = 7,168 values at FP8 (1 byte) for each of B* = 5,667.2 sequences (GB200:
    # 5,000 TFLOP/s / (2 x 8 TB/s) x 671/37 = 5,667): 40.62 MB, over 64 chips' 50 GB/s ports
    size = 5000e12 / (2 * 8e12) * 671 / 37 * 7168
    assert ctx["hop_bytes"] == f"{size / 1e6:.2f} MB"
    assert ctx["hop_transfer"] == f"{size / (64 * 50e9) * 1e6:.2f} µs"


def test_the_memory_wall_from_a100_to_gb200(ctx):
    # facts.md: A100 312 TFLOP/s BF16, 2.039 TB/s, 80 GB; GB200 2,500 TFLOP/s, 8 TB/s, 186 GB
    assert ctx["wall_flops"] == "8"  # 2500 / 312 = 8.01
    assert ctx["wall_capacity"] == "2.3"  # 186 / 80 = 2.33


def test_one_training_sequence_is_past_the_decode_crossover(ctx):
    # 8,192 tokens against DeepSeek-V3's 5,667 on GB200 (1.4x) and a dense 312.5 (26x)
    assert ctx["train_over_star"] == "1.4"
    assert ctx["train_over_dense"] == "26"


# -- the schedule figure ----------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(pipeline.SCHEDULES),
    stages=st.integers(1, 16),
    microbatches=st.integers(1, 64),
    back=st.sampled_from([1.0, 2.0, 3.0]),
)
def test_a_placed_schedule_idles_each_stage_as_the_bubble_equation_says(
    kind, stages, microbatches, back
):
    from derivations import get

    step = pipeline.schedule(kind, stages, microbatches, back)
    assert len(step) == 2 * stages * microbatches
    # by hand: P - 1 idle slots of m + P - 1, whatever a backward costs
    assert pipeline.idle_share(step) == pytest.approx((stages - 1) / (microbatches + stages - 1))
    equation = get("pipeline_bubble_fraction").evaluate(
        pipeline_stages=stages, microbatches=microbatches
    )
    assert pipeline.idle_share(step) == pytest.approx(equation.to("").m, abs=1e-12)
    # GPipe holds every micro-batch's activations; 1F1B at most as many as stages
    expected = microbatches if kind == "gpipe" else min(stages, microbatches)
    assert pipeline.peak_in_flight(step) == expected


def test_a_pass_never_starts_before_its_input_is_ready():
    step = pipeline.schedule("1f1b", 4, 16, 2.0)
    end = {(p.stage, p.microbatch, p.backward): p.end for p in step}
    for p in step:
        if not p.backward and p.stage > 0:
            assert p.start >= end[(p.stage - 1, p.microbatch, False)]
        if p.backward:
            before = (p.stage + 1, p.microbatch, True) if p.stage < 3 else (3, p.microbatch, False)
            assert p.start >= end[before]
    for s in range(4):  # one pass at a time per stage
        spans = sorted((p.start, p.end) for p in step if p.stage == s)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


@settings(max_examples=30, deadline=None)
@given(stages=st.integers(1, 16), tokens=st.integers(1, 8))
def test_pipelined_decoding_idles_only_in_the_first_fill(stages, tokens):
    step = pipeline.inference_schedule(stages, tokens)
    assert len(step) == stages * stages * tokens  # every micro-batch's every token, every stage
    start = {(p.stage, p.microbatch): p.start for p in step}
    end = {(p.stage, p.microbatch): p.end for p in step}
    for p in step:
        if p.stage > 0:  # a stage takes a token as the previous stage hands it over
            assert p.start == end[(p.stage - 1, p.microbatch)]
    last = stages - 1
    for i in range(stages):  # the next token enters stage 1 as the last leaves the last stage
        for t in range(tokens - 1):
            assert start[(0, i + stages * (t + 1))] == end[(last, i + stages * t)]
    for s in range(stages):  # stage s idles its s fill slots, then never until its work is done
        spans = sorted((p.start, p.end) for p in step if p.stage == s)
        assert spans[0][0] == s and all(
            a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False)
        )


def test_an_unknown_schedule_is_named():
    with pytest.raises(ValueError, match="gpipe, 1f1b"):
        pipeline.schedule("zigzag", 4, 4, 2.0)


def test_the_backward_pass_costs_two_forwards_as_training_compute_says():
    assert pipeline.backward_cost() == 2.0  # 6 N D = 2 N D forward + 4 N D backward


def test_the_schedule_figure_labels_the_bubble_of_the_equation():
    fig = FIGURES["pipeline_schedule"](load())
    # presets: P = 4 stages, m = 16 micro-batches; (4 - 1) / (16 + 4 - 1) = 3/19 = 15.8%
    assert "= 15.8%" in fig.caption and "idle 15.8%" in fig.alt
    assert fig.svg.count("bubble 15.8% of each stage") == 2  # both panels' titles
    assert "instead of 16" in fig.caption and "holds 4 micro-batches" in fig.caption


def test_the_bubble_table_prints_percentages(ctx):
    rows = {r["stages"]: r["cells"] for r in ctx["bubble"]["rows"]}
    assert rows["1"] == ["0%", "0%", "0%"]  # one stage never waits
    # two figures, as the prose says them (reader-moepipe13, fault 7): 3/7, 3/19, 3/67
    assert rows["4"] == ["43%", "16%", "4.5%"]
    assert rows["16"][0] == "79%"  # 15/19
    assert rows["8"][2] == "9.9%"  # 7/71


def test_the_chapter_page_shows_the_schedule_where_it_derives_the_bubble(built_page):
    schedule = built_page.index('id="figure-pipeline_schedule"')
    # in the section that derives the bubble, after its equation, before its worked example
    assert built_page.index("Training: the bubble") < schedule
    assert built_page.index("So the idle share of") < schedule
    assert schedule < built_page.index("Worked example: how big is the bubble?")
    figure = built_page[schedule : built_page.index("</figure>", schedule)]
    assert "bubble 15.8% of each stage" in figure  # 3/19, the equation at the presets


@pytest.fixture(scope="module")
def built_page(printed_site):
    return (printed_site / "chapters/pipeline/index.html").read_text()


def test_the_scaling_book_s_tensor_parallel_rule_beside_the_chapter_s():
    # the scaling book's rule, split fewer than F W / C ways: DeepSeek-V3's expert width
    # F = 2,048 (models.toml), an H100's 450 GB/s NVLink per direction and 989.4 TFLOP/s BF16
    book = 2048 * 450e9 / 989.4e12
    tp = pipeline._tensor_parallel(load())["tp"]
    assert tp["book_ways"].exact == f"{book:.2f}" == "0.93"
    # the chapter's gated expert has three matrices to the book's two, and a ring over Y chips
    # sends (Y - 1)/Y of the collectives: compute = comms at Y = 1 + 1.5 F W / C
    assert tp["matrices_ratio"].exact == "1.5"
    assert tp["max_ways"].exact == f"{1 + 1.5 * book:.2g}" == "2.4"


def test_the_setup_step_is_the_crossover_micro_batch_s_read_by_hand(ctx):
    # DeepSeek-V3 on 64 GB200 chips at 8,192 tokens: the crossover micro-batch is
    # 5,000 / 8 / 2 x 671 / 37 = 5,667 sequences; per step the chips read 671 GB of FP8 weights
    # and 5,667 x 8,192 tokens x 576 x 61 bytes of FP8 MLA cache over 64 x 8 TB/s: 1.31 + 3.19 ms
    # (compute, 3.8 ms, is the smaller), the reader's 4.5 ms (reader-moepipe14, P1)
    batch = 5000 / 8 / 2 * 671 / 37
    step = (671e9 + batch * 8192 * 576 * 61) / (64 * 8e12)
    assert pipeline.setup_step(load()).to("s").m == pytest.approx(step, rel=1e-3)
    assert ctx["setup_step"] == "4.5 ms"
    # four measured hops of 77 and 369 us against it, and a 100 us allowance
    assert ctx["setup_share_fast"] == f"{4 * 77e-6 / step * 100:.1f}%"  # 6.8%
    assert ctx["setup_share_slow"] == f"{4 * 369e-6 / step * 100:.0f}%"  # 33%
    assert ctx["ex"]["double_slow_setup"] == str(round(step / 369e-6))  # 12 stages
    assert ctx["ex"]["double_network_setup"] == str(round(step / 100e-6))  # 45 stages


def test_exercise_4_table_has_all_eight_cases_by_hand(ctx):
    # Stages whose hops alone equal the step, P = tau / t_hop (reader-moepipe15, P1): the
    # lecture's 2.5 ms, DeepEP's 369 and 77 us exchanges and the 100 us allowance, at the
    # lecture's 20 ms step and at the 4.5 ms setup step computed by hand as above
    batch = 5000 / 8 / 2 * 671 / 37
    step = (671e9 + batch * 8192 * 576 * 61) / (64 * 8e12)
    table = ctx["ex"]["double_table"]
    hops = (2.5e-3, 369e-6, 100e-6, 77e-6)
    assert [h.split(" ", 1)[1] for h in table["headers"]] == ["2.5 ms", "369 µs", "100 µs", "77 µs"]
    cells = [[float(c) for c in r["cells"]] for r in table["rows"]]
    for row, tau in zip(cells, (20e-3, step), strict=True):
        assert row == [pytest.approx(tau / h, rel=0.05) for h in hops]
    assert cells[1][0] < 2  # the lecture's guess: two stages more than double the short step
    assert cells[0] == [8, 54, 200, 260]


def test_the_bubble_rule_s_overstatement_in_points_and_share_by_hand(ctx):
    # P = 4, m = 16: (P - 1)/m = 3/16 = 18.75% against the exact 3/19 = 15.79%, 2.96 points
    # over, 18.75/15.79 - 1 = 0.1875 of it: about a fifth (reader-moepipe15, P7)
    assert ctx["bubble_rule_points"] == f"{100 * (3 / 16 - 3 / 19):.0f}" == "3"
    assert ctx["bubble_rule_high_share"] == "fifth"


def test_the_schedule_exercise_by_hand(ctx):
    # Llama 3.1 70B, one sequence of 8,192 tokens: 40.5 bytes per value (its own layer) x 8,192
    # tokens x 8,192 values x 80 layers = 217.4 GB stored, 2 x 8,192 x 8,192 x 80 = 10.74 GB with
    # each layer re-run. P = 4 stages, m = 16: the first stage holds m = 16 micro-batches under
    # GPipe and P = 4 under 1F1B, each a quarter of a sequence's activations (reader P8)
    stored, rerun = 40.5 * 8192 * 8192 * 80, 2 * 8192 * 8192 * 80
    # re-running, the layer being differentiated holds its internals beyond its kept input once,
    # (40.5 - 2) x 8,192 x 8,192 = 2.58 GB, as the reversible chapter counts it (reader 17, P3)
    layer = (40.5 - 2) * 8192 * 8192
    s = ctx["sched"]
    assert (s["held"]["gpipe"], s["held"]["1f1b"]) == ("16", "4")
    expected = {
        "gpipe_stored": 16 / 4 * stored,
        "gpipe_recompute": 16 / 4 * rerun + layer,
        "1f1b_stored": stored,  # P micro-batches of 1/P each: one whole sequence
        "1f1b_recompute": rerun + layer,
    }
    for key, value in expected.items():
        assert float(s["memory"][key].split()[0]) * 1e9 == pytest.approx(value, rel=1e-3), key


def test_the_hops_leave_a_gap_in_decoding_unless_more_micro_batches_fly(ctx):
    # reader report 17, P2: with P = 4 micro-batches in flight, each round is the step (4.5 ms,
    # by hand in the setup-step test above) plus 4 hops of the 100 us allowance, during which
    # every stage idles: 0.4 / 4.9 = 8.2%. ceil(4 + 16 x 0.1 / 4.5) = 5 micro-batches hide them;
    # at DeepEP's slowest 369 us, 4 x 0.369 / (4.5 + 1.476) = 25% and ceil(4 + 16 x 0.369 / 4.5)
    batch = 5000 / 8 / 2 * 671 / 37
    step = (671e9 + batch * 8192 * 576 * 61) / (64 * 8e12)
    idle = ctx["idle"]
    assert idle["share"] == f"{100 * 4e-4 / (step + 4e-4):.2g}%" == "8.2%"
    assert idle["share_slow"] == f"{100 * 4 * 369e-6 / (step + 4 * 369e-6):.2g}%"
    assert idle["needed"] == str(math.ceil(4 + 16 * 100e-6 / step)) == "5"
    assert idle["needed_slow"] == str(math.ceil(4 + 16 * 369e-6 / step)) == "6"


def test_pipelining_divides_the_data_parallel_reduce_per_gpu(ctx):
    # reader report 17, P1: an H100 (989.4 TFLOP/s dense BF16, 50 GB/s network port per
    # direction) reduces its 1/8 of a node's BF16 gradients (2 bytes a parameter) in a ring,
    # about twice the bytes. Gradients exist only in the backward pass, 4 FLOP per parameter per
    # token (reader-pr25 fault 1; the scaling book's 2,475 per GPU): t = 2 x 2 x 989.4e12 /
    # (4 x 50e9) / 8 = 2,474 tokens per GPU for a one-node replica, 309 over 8 stages
    one = 2 * 2 * 989.4e12 / (4 * 50e9) / 8
    assert ctx["dp"]["tokens_one"] == f"{round(one, -1):,.0f}" == "2,470"
    assert ctx["dp"]["tokens_pp"] == f"{one / 8:.0f}" == "309"
    # reader-mpr21 fault 2: the invariant is per replica, 2 x 2 x 989.4e12 / (4 x 50e9) = 19,788
    # tokens per step whatever the stages; 8 GPUs in a one-node replica, 64 over 8 stages
    assert ctx["dp"]["tokens_replica"] == f"{round(8 * one, -2):,.0f}" == "19,800"
    assert (ctx["dp"]["gpus_one"], ctx["dp"]["gpus_pp"]) == ("8", "64")


def test_the_setup_step_splits_into_weight_read_kv_read_and_compute(ctx):
    # reader-pr25 fault 2, by hand: 5,667 sequences on 64 GB200 chips (5 PFLOP/s FP8, 8 TB/s).
    # Matmuls 2 x 37e9 x 5,667 / (64 x 5e15) = 1.31 ms, equal to the weight read 671e9 / (64 x
    # 8e12) = 1.31 ms (the weights-only crossover); the KV read 5,667 x 8,192 x 576 x 61 /
    # (64 x 8e12) = 3.19 ms; MLA attention 2 x 128 x (2 x 512 + 64) x 61 = 17.0 MFLOP per
    # context token, x 8,192 x 5,667 / (64 x 5e15) = 2.47 ms: compute 3.78 ms < 4.50 ms of reads
    batch = 5000 / 8 / 2 * 671 / 37
    matmuls = 2 * 37e9 * batch / (64 * 5e15)
    kv = batch * 8192 * 576 * 61 / (64 * 8e12)
    attention = 2 * 128 * (2 * 512 + 64) * 61 * 8192 * batch / (64 * 5e15)
    split = ctx["split"]
    assert split["matmuls"] == split["weights"] == f"{matmuls * 1e3:.2g} ms" == "1.3 ms"
    assert split["kv"] == f"{kv * 1e3:.2g} ms" == "3.2 ms"
    assert split["attention"] == f"{attention * 1e3:.2g} ms" == "2.5 ms"
    assert split["compute"] == f"{(matmuls + attention) * 1e3:.2g} ms" == "3.8 ms"
    assert split["memory_bound"]
    assert split["over_compute"] == f"{(671e9 / (64 * 8e12) + kv) / (matmuls + attention):.2g}"


def test_the_memory_figures_add_up_as_printed(ctx):
    # reader-pr25 fault 3: "10 GB + 25 GB = 36 GB" no longer; every row of the stages table,
    # and each sum in the prose, is the sum of its printed parts
    for row in ctx["stages"]["rows"]:
        weights, kv, total = (float(c) for c in row["cells"])
        assert weights + kv == pytest.approx(total, abs=0.051), row
    gb = {k: float(ctx[k].said.split()[0]) for k in ("weights_first", "kv_per_chip", "total_first")}
    assert gb["weights_first"] + gb["kv_per_chip"] == pytest.approx(gb["total_first"], abs=1e-9)
    two = float(ctx["weights_two"].said.split()[0])
    assert two + gb["kv_per_chip"] == pytest.approx(float(ctx["total_two"].split()[0]), abs=1e-9)
    # by hand: DeepSeek-V3's 671 GB over 64 chips = 10.48 GB; KV 5,667 x 8,192 x 576 x 61 / 64
    assert gb["weights_first"] == 10.5
    assert gb["kv_per_chip"] == round(5000 / 8 / 2 * 671 / 37 * 8192 * 576 * 61 / 64 / 1e9, 1)


def test_the_training_memory_counts_recomputation_as_the_reversible_chapter_does(ctx):
    # reader report 17, P3: 80 layer inputs of 2 x 8,192 x 8,192 bytes (10.74 GB) and one layer's
    # internals beyond its input, (40.5 - 2) x 8,192 x 8,192 (2.58 GB): 13.32 GB, said "13 GB"
    from book.chapters import reversible

    rerun = (80 * 2 + 40.5 - 2) * 8192 * 8192
    assert ctx["training"]["rerun"].exact == f"{rerun / 1e9:.4g} GB" == "13.32 GB"
    assert ctx["training"]["rerun"].said == "13 GB"
    same = reversible.context(load())["strategies"][1]["memory"]
    # the reversible chapter's table prints three figures (reader-pr25 fault 3), this chapter's
    # four: the same figure
    assert same.exact == f"{rerun / 1e9:.3g} GB"
