"""Gates of single long-context problems, computed independently of the problem files (from the
model's and chip's figures as the statement prints them) over many seeds."""

import math
import re
from functools import cache

from book.checker import answer_spec, check
from book.problem_bank.long_context import kv_overtakes_compute
from book.problems import authored
from units.presets import load

SEEDS = range(200)


@cache
def presets():
    return load()


def _figure(pattern: str, text: str) -> float:
    return float(re.search(pattern, text).group(1).replace(",", ""))


def test_kv_overtakes_compute_grades_the_lecture_shortcut_wrong_on_every_draw():
    """Leaving attention's FLOPs out (the lecture's crossing, 2N × bandwidth / (FLOP/s × cache
    bytes per token)) is rejected with its diagnosis on every draw, and the answer is the
    crossing with attention counted, from the printed figures: the reads L × kv / BW equal the
    multiplies (2N + L × attention) / FLOP/s. Reader 14 (issue 21): counting attention must
    matter, at least 10% (a 1.3% shift graded at 0.6% made the lecture's own method a
    "mistake"), and the tolerance stays a practitioner's (at least 1%)."""
    p_ = presets()
    for seed in SEEDS:
        p = authored(kv_overtakes_compute, seed, p_)
        model = next(
            m for m in (p_.get("model", n) for n in kv_overtakes_compute.MODELS) if m.name in p.text
        )
        flops = _figure(r"\(([\d,.]+) TFLOP/s dense", p.text) * 1e12
        bandwidth = _figure(r"([\d.]+) TB/s of HBM", p.text) * 1e12
        active = _figure(r"\(([\d.]+) B parameters", p.text) * 1e9
        per_value = 1 if "in FP8" in p.text else 2
        if model.attention == "mla":
            rank, rope = model.kv_lora_rank, model.qk_rope_head_dim
            kv = (rank + rope) * model.layers * per_value
            attention = 2 * model.n_heads * (2 * rank + rope) * model.layers
        else:
            kv = 2 * model.n_kv_heads * model.head_dim * model.layers * per_value
            attention = 2 * 2 * model.n_heads * model.head_dim * model.layers
        # the statement gives attention's FLOPs (reader 19: the lecture teaches no MLA count),
        # to four figures, of the shape's; the answer solves from the printed figure
        given = _figure(r"attention costs ([\d.]+) MFLOP per token of context", p.text) * 1e6
        assert abs(given / attention - 1) < 5e-4, f"seed {seed}: {given} vs {attention}"
        attention = given
        weights = 2 * active
        counted = (weights / flops) / (kv / bandwidth - attention / flops)
        plain = weights * bandwidth / (flops * kv)
        where = f"seed {seed}: {p.text[:60]}"
        assert abs(p.answer.m / counted - 1) < 1e-6, where
        assert abs(plain / counted - 1) > 2 * p.tolerance, where  # the shortcut is well outside
        assert counted / plain - 1 >= 0.10, f"{where}: attention moves it by under 10%"
        assert p.tolerance >= 0.01, where
        spec = answer_spec(p)
        for shown in (f"{plain:.0f} tokens", f"{float(f'{plain:.3g}'):.0f} tokens"):
            verdict = check(shown, spec)
            assert not verdict["ok"], f"{where}: {shown} accepted"
            assert "attention" in verdict["message"], f"{where}: {verdict['message']}"
        assert check(f"{counted:.0f} tokens", spec)["ok"], where


def test_million_token_conversation_is_a_pipelined_lone_user():
    """The weights and one full window's cache need two servers or more; a pipelined token
    visits them one after another, so the lone user's speed is one server's bandwidth over
    everything held, and counting every GPU's bandwidth at once is graded wrong."""
    from book.problem_bank.long_context import million_token_conversation as problem

    for seed in range(40):
        p = authored(problem, seed, presets())
        params = _figure(r"\(([\d.,]+) B parameters", p.text) * 1e9
        millions = _figure(r"to ([\d.]+) million tokens", p.text)
        layers = _figure(r"has (\d+) layers", p.text)
        heads = _figure(r"with (\d+) KV heads", p.text)
        dim = _figure(r"KV heads of (\d+) values", p.text)
        recalled = " ".join(p.solution)  # the chip's figures, as the solution restates them
        hbm = _figure(r"has (\d+) GB of HBM", recalled) * 1e9
        bandwidth = _figure(r"HBM at ([\d.]+) TB/s", recalled) * 1e12
        held = params * 2 + 2 * layers * heads * dim * 2 * millions * 1e6  # bytes, BF16
        servers = -(-held // (0.9 * 8 * hbm))  # an engine fills 90% of HBM (the statement)
        speed = 8 * bandwidth / held  # tokens per second
        where = f"seed {seed}: {p.text[:60]}"
        assert servers >= 2, where
        assert abs(p.answer.to("token/s").m / speed - 1) < 1e-3, where
        spec = answer_spec(p)
        assert check(f"{speed:.3g} tokens/s", spec)["ok"], where
        every_gpu = check(f"{speed * servers:.3g} tokens/s", spec)
        assert not every_gpu["ok"] and "one after another" in every_gpu["message"], where


def test_hold_in_hbm_or_recompute_names_both_attention_slips():
    """The wait is (prefill time / read-back time − 1) drain times, the prefill 2N plus causal
    attention over half the context. Reader 17: leaving attention out, or counting it over the
    whole context, landed 4% off against a 3% window with no diagnosis; now attention is at
    least twice the window of the prefill and each slip is graded wrong and told why."""
    from book.problem_bank.long_context import hold_in_hbm_or_recompute as problem

    for seed in range(60):
        p = authored(problem, seed, presets())
        t = p.text
        found = re.search(r"([\d.,]+) B parameters active", t) or re.search(
            r"model has ([\d.,]+) B parameters", t
        )
        params = float(found.group(1).replace(",", "")) * 1e9
        byte = 1 if "in FP8" in t else 2
        hbm = _figure(r"\(([\d,]+) GB of HBM", t) * 1e9
        bandwidth = _figure(r"HBM at ([\d.]+) TB/s", t) * 1e12
        flops = _figure(r"([\d.,]+) TFLOP/s dense", t) * 1e12
        layers = _figure(r"attention: (\d+) layers", t)
        kv_heads, dim = _figure(r"and (\d+) KV heads", t), _figure(r"KV heads of (\d+) values", t)
        attention = _figure(r"attention costs ([\d.]+) MFLOP", t) * 1e6
        context = _figure(r"conversation of ([\d,]+) tokens", t)
        read = 2 * layers * kv_heads * dim * byte / bandwidth  # a token's cache, read back

        def wait(per_token, drain=hbm / bandwidth, read=read, flops=flops):
            return drain * (per_token / flops / read - 1)

        answer = wait(2 * params + attention * context / 2)
        where = f"seed {seed}: {t[:60]}"
        assert abs(p.answer.to("s").m / answer - 1) < 0.01, where
        spec = answer_spec(p)
        assert check(f"{answer:.4g} s", spec)["ok"], where
        for value, words in (
            (wait(2 * params), "left attention out"),
            (wait(2 * params + attention * context), "whole context"),
        ):
            said = check(f"{value:.4g} s", spec)
            assert not said["ok"] and words in said["message"], (where, said["message"])


def test_where_to_park_a_cache_serves_on_gpus_that_hold_the_model():
    """Reader 19: Llama 3.1 405B in BF16 (812 GB) was served on 8 H100s (640 GB). Every draw's
    GPUs, as the statement counts them, hold the BF16 weights and the conversation's cache with
    a fifth of the HBM to spare, by hand from the printed figures."""
    from book.problem_bank.long_context import where_to_park_a_cache as problem

    for seed in range(40):
        p = authored(problem, seed, presets())
        params = _figure(r"\(([\d.,]+) B parameters\)", p.text) * 1e9
        count = re.search(r"in BF16 on (one|\d+) NVIDIA", p.text).group(1)
        gpus = 1 if count == "one" else int(count)
        hbm = _figure(r"rent for its (\d+) GB", p.text) * 1e9
        layers = _figure(r"has (\d+) layers", p.text)
        heads = _figure(r"with (\d+) KV heads", p.text)
        dim = _figure(r"KV heads of (\d+) values", p.text)
        context = _figure(r"reached ([\d,]+) tokens", p.text)
        held = 2 * params + 2 * layers * heads * dim * 2 * context  # bytes, BF16
        assert held <= 0.8 * gpus * hbm, f"seed {seed}: {p.text[:90]}"


def test_sequences_that_fit_names_the_slip_a_wrong_count_comes_from():
    """Reader 19: a cache stored at two bytes gave the count the weights at two bytes give, and
    was told "You stored the weights at two bytes". The count of a BF16 cache, by hand from the
    printed figures, is graded wrong with a message that speaks of the cache."""
    from book.problem_bank.long_context import sequences_that_fit as problem

    for seed in range(40):
        p = authored(problem, seed, presets())
        params = _figure(r"\(([\d.,]+) [BT] parameters", p.text)
        params *= 1e12 if re.search(r"\([\d.,]+ T parameters", p.text) else 1e9
        count = re.search(r"on (one|\d+) ", p.text).group(1)
        gpus = 1 if count == "one" else int(count)
        hbm = _figure(r"with (\d+) GB of HBM", p.text) * 1e9
        layers = _figure(r"in all (\d+) layers", p.text)
        heads = _figure(r"with (\d+) KV heads", p.text)
        dim = _figure(r"KV heads of (\d+) values", p.text)
        context = _figure(r"conversations of ([\d,]+) tokens", p.text)
        share = _figure(r"fills at most (\d+)% of it", p.text) / 100  # the engine's reserve
        cache_bf16 = 2 * layers * heads * dim * 2 * context  # bytes, a key and a value
        slipped = math.floor((share * gpus * hbm - params) / cache_bf16)  # FP8 weights, 1 byte
        where = f"seed {seed}: {p.text[:80]}"
        if slipped < 1 or slipped == p.answer.m:
            continue
        verdict = check(f"{slipped} sequences", answer_spec(p))
        assert not verdict["ok"], where
        message = verdict["message"].lower()
        assert "cache" in message or "kv" in message, f"{where}: {verdict['message']}"


def test_sequences_that_fit_tells_a_count_rounded_up_it_rounded():
    """Reader 26: 3.496 conversations, rounded by a student to 3.5 and then up to 4, was told
    "You filled the whole HBM". The quotient the solution prints, rounded to the nearest count
    where that is up, is graded wrong with a message about the rounding."""
    from book.problem_bank.long_context import sequences_that_fit as problem

    for seed in range(40):
        p = authored(problem, seed, presets())
        quotient = _figure(r"= ([\d.,]+), and only whole", " ".join(p.solution))
        if round(quotient + 0.05) == p.answer.m:  # 3.46 and up read as a half
            continue
        verdict = check(f"{round(quotient + 0.05)} sequences", answer_spec(p))
        assert not verdict["ok"], f"seed {seed}"
        assert "rounded" in verdict["message"], f"seed {seed}: {verdict['message']}"
