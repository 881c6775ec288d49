"""Does a prompt-cache write premium pay for holding the cache on a given memory tier?"""

from __future__ import annotations

from book.format import number
from book.problem_bank import (
    Draw,
    Mistake,
    distinct_mistakes,
    money,
    require,
    slips_apart,
)
from derivations import get
from units import Q_

KIND = "multi"
TITLE = "Does the cache-write premium pay for the memory?"
USES = ("kv_bytes_per_token", "cache_write_premium", "cache_premium_over_hold")
LECTURE = "1:33:02"

APIS = ("claude_opus_4_6", "claude_sonnet_4")
LIFETIMES = (
    ("cache_write_5min", "cache_duration_short"),
    ("cache_write_1h", "cache_duration_long"),
)
MODELS = (
    "llama_3_1_70b",
    "llama_3_1_405b",
    "qwen3_235b_a22b",
    "deepseek_v3",
    "kimi_k2",
    "mixtral_8x7b",
)
TIERS = ("hbm_h100", "dram_ddr5", "flash_nvme")
BYTES = {"bf16": "two bytes", "fp8": "one byte"}
NAMES = {"bf16": "BF16", "fp8": "FP8"}
RENT = "lecture_gpu"  # what HBM costs: the GPU's rent over its capacity
TOLERANCE = 0.03


def _attention(model) -> str:
    if model.attention == "mla":
        return (
            f"caches one latent of {number(model.kv_lora_rank)} values and one rotary key of "
            f"{number(model.qk_rope_head_dim)} values per token in each of its "
            f"{number(model.layers)} layers"
        )
    return (
        f"has {number(model.layers)} layers, each with {number(model.n_kv_heads)} KV heads of "
        f"{number(model.head_dim)} values"
    )


def _scenario(rng, presets):
    """A model, a cache precision and a lifetime whose three byte-and-price slips land apart.

    The premium of the one-hour write equals the input price, so the whole write price doubles
    the ratio, as a grouped-query cache counted as one vector per head does: a GQA model takes the
    five-minute write (a whole write price of five premiums). A BF16 cache counted at one byte a
    value doubles it too, so a GQA cache is FP8 (its slip, two bytes, halves the ratio); an MLA
    cache, one vector a layer, may be BF16 only beside the five-minute write.
    """
    name = rng.choice(MODELS)
    model = presets.get("model", name)
    if model.attention == "mla":
        precision = rng.choice(tuple(NAMES))
        lifetimes = LIFETIMES if precision == "fp8" else LIFETIMES[:1]
    else:
        precision, lifetimes = "fp8", LIFETIMES[:1]
    return name, model, precision, rng.choice(lifetimes)


def draw(rng, presets) -> Draw:
    api_id = rng.choice(APIS)
    name, model, precision, (write_field, life_field) = _scenario(rng, presets)
    tier_id = rng.choice(TIERS)
    api = presets.get("api", api_id)
    tier = presets.get("tier", tier_id)
    write = api.get(write_field).to("USD/Mtoken")
    life = presets.parameter[life_field].value
    case = dict(model=name, api=api_id, price=RENT, precision=precision, presets=presets)

    premium = get("cache_write_premium").evaluate(cache_write_price=write, **case)
    premium = premium.to("USD/Mtoken")
    result = get("cache_premium_over_hold").evaluate_detailed(
        tier=tier_id, cache_lifetime=life, cache_write_price=write, **case
    )
    ratio = result.value.to("")
    per_token = result.inputs["kv_bytes_per_token"].value.to("kB/token")
    price = result.inputs["tier_price"].value.to("USD/GB/hour")
    hold = (per_token * life * price).to("USD/Mtoken")
    rent = presets.get("rental", RENT).price

    if tier.get("price") is not None:
        where = f"{tier.medium}, rented at {money(tier.price)}"
    else:
        where = f"HBM, which costs the GPU's rent, {money(rent)}, over its {money(tier.capacity)}"
    text = (
        f"{api.name} charges {money(api.input.to('USD/Mtoken'))} for input tokens and "
        f"{money(write)} for input written to a prompt cache that lives "
        f"{money(life)}. Suppose the model behind it {_attention(model)}, caches in "
        f"{NAMES[precision]}, "
        f"and that the provider keeps written caches in {where}. How many times over does "
        "the extra charge for writing the cache pay for holding it for its lifetime? (Below "
        "one, it does not.)"
    )
    if tier.get("price") is not None and "month" in str(tier.price.units):
        hours = number(Q_(1, "month").to("hour").m, 4)
        month = f" A month here is a twelfth of a year, {hours} hours."
        text = text.replace(" How many times over", month + " How many times over")
    what = (
        "a latent and a rotary key per layer"
        if model.attention == "mla"
        else "a key and a value per KV head per layer"
    )
    if ratio.m >= 2:
        verdict = "The premium pays for this tier with room to spare"
    elif ratio.m >= 1:
        verdict = "The premium just pays for this tier"
    else:
        verdict = (
            "The premium does not cover this tier (a cache kept this long must live somewhere "
            "cheaper)"
        )
    solution = (
        f"A cache write is an input token's prefill plus the holding, so the holding is paid "
        f"by the premium: {money(write)} − {money(api.input.to('USD/Mtoken'))} = "
        f"{money(premium)}.",
        f"Each cached token holds {what}, {BYTES[precision]} each in {NAMES[precision]}: "
        f"{money(per_token)}.",
        f"The tier costs {money(price)}; a million tokens' cache held for "
        f"{money(life)} costs {money(per_token)} × {money(life)} × that price = "
        f"{money(hold, 3)}.",
        f"{verdict}: {money(premium)} / {money(hold, 3)} = **{number(ratio.m, 4)} times**.",
    )
    candidates = [
        (
            ratio * (write / premium).to(""),
            "You set the whole write price against the holding; the input price already pays "
            "for the prefill, so only the premium is left for it.",
        )
    ]
    # the other tier's lifetime (reader 28: held an hour for a five-minute write, twelve times
    # the holding); the premium is this write's, the holding the other lifetime's
    other = presets.parameter[next(f for _, f in LIFETIMES if f != life_field)].value
    candidates.append(
        (
            ratio * (life / other).to(""),
            f"You held the cache for {money(other)}; this write buys a cache that lives "
            f"{money(life)}.",
        )
    )
    if precision == "bf16":
        candidates.append((ratio * 2, "BF16 stores two bytes per value; you counted one."))
    else:
        candidates.append((ratio / 2, "FP8 stores one byte per value; you counted two."))
    if model.attention == "gqa":
        candidates.append(
            (ratio * 2, "You cached one vector per KV head; each caches a key and a value.")
        )
    else:
        latent = model.kv_lora_rank / (model.kv_lora_rank + model.qk_rope_head_dim)
        candidates.append(
            (ratio / latent, "You left out the rotary key: each layer caches it beside the latent.")
        )
    if tier.get("price") is not None and "month" in str(tier.price.units):
        hours = (Q_(1, "month") / Q_(1, "hour")).to("").m  # hours in a month
        candidates.append((ratio / hours, "You read the monthly price as a price per hour."))
    slips = [Mistake(v, w) for v, w in candidates]
    for slip in slips:  # twice the window clear of the answer (none inside it) ...
        off = abs((slip.value / ratio).to("").m - 1)
        require(off >= 2 * TOLERANCE, "each slip lands clear of the answer")
    # ... and of each other (reversed: each later slip over an earlier one, as ever)
    require(slips_apart(slips[::-1], ratio, TOLERANCE), "each slip lands clear of the others")
    mistakes = distinct_mistakes(slips, ratio, TOLERANCE)
    return Draw(
        hint=(
            "The premium is the write price less the plain input price; the holding costs "
            "what the medium costs per byte-hour times the cache's bytes and its lifetime."
        ),
        text=text,
        answer=ratio,
        solution=solution,
        tolerance=TOLERANCE,
        mistakes=mistakes,
    )
