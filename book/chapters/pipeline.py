"""Chapters C and D's context: memory per chip against stages, traffic, hops and the bubble.

>>> from units.presets import load
>>> ctx = context(load())
>>> len(ctx["stages"]["rows"]) == len(STAGES)
True
"""

import derivations
from book.context import Evaluator, cell_in, header
from book.format import quantity
from units import Q_
from units.presets import Presets

MODEL = "deepseek_v3"
RACK = "gb200_nvl72"
STAGES = (1, 2, 4, 8, 16)
MICROBATCHES = (4, 16, 64)


def context(presets: Presets) -> dict:
    ev = Evaluator(presets, RACK, MODEL, "fp8")
    memory = _stages_table(ev)
    first, _ = memory_split(ev, pipeline_stages=Q_(STAGES[0], "stage"))
    last, kv = memory_split(ev, pipeline_stages=Q_(STAGES[-1], "stage"))
    lecture = Evaluator(presets)
    return {
        "model": presets.get("model", MODEL).name,
        "rack": presets.get("hardware", RACK).name,
        "stages": memory,
        "weights_first": quantity(first.to("GB")),
        "weights_last": quantity(last.to("GB")),
        "kv_per_chip": quantity(kv.to("GB")),
        "stage_range": f"{STAGES[0]} to {STAGES[-1]}",
        "micro_batch": ev.text("micro_batch_size"),
        "per_weight_byte": ev.text("dense_crossover_batch"),
        "context_length": quantity(presets.parameter["context_length"].value),
        "ep_chips": quantity(presets.parameter["expert_parallel_chips"].value),
        "hbm": quantity(presets.get("hardware", RACK).hbm_capacity),
        "ratio_one_layer": ev.text("scaleup_scaleout_ratio", moe_layers_per_stage=Q_(1, "layer")),
        "ratio_default": ev.text("scaleup_scaleout_ratio"),
        "layers_per_stage": ev.text("layers_per_stage"),
        "moe_layers_per_stage": ev.text("moe_layers_per_stage"),
        "latency": lecture.text("pipelined_decode_latency"),
        "hop_network": quantity(presets.parameter["hop_latency_network"].value),
        "latency_network": lecture.text(
            "pipelined_decode_latency", hop_latency=presets.parameter["hop_latency_network"].value
        ),
        "period": quantity(presets.parameter["train_period"].value),
        "hop": quantity(presets.parameter["hop_latency"].value),
        "stages_default": quantity(presets.parameter["pipeline_stages"].value),
        "domain_fetch": [
            {
                "name": presets.get("hardware", hw).name,
                "time": Evaluator(presets, hw, MODEL, "fp8").text("domain_weight_fetch_time"),
            }
            for hw in ("h100_sxm", "b200", "gb200_nvl72")
        ],
        "one_tb": Evaluator(presets, precision="fp8").text(
            "weight_memory", n_total=Q_(1, "Tparameter")
        ),
        "one_tb_params": quantity(Q_(1, "Tparameter")),
        "fp8_bytes": quantity(presets.get("precision", "fp8").bytes_per_value),
        "bubble": _bubble_table(lecture),
        **_training_memory(presets),
    }


def memory_split(ev: Evaluator, **overrides) -> tuple:
    """Memory per chip split into (weights, KV cache) on one evaluator."""
    kv_symbol = derivations.lookup_symbol("kv_bytes_per_token").sym
    weights = kv = None
    for term, value in ev.terms("memory_per_gpu", **overrides).items():
        if kv_symbol in term.free_symbols:
            kv = value
        else:
            weights = value
    return weights, kv


def _stages_table(ev: Evaluator) -> dict:
    rows = []
    for p in STAGES:
        weights, kv = memory_split(ev, pipeline_stages=Q_(p, "stage"))
        rows.append(
            {
                "stages": str(p),
                "cells": [
                    cell_in("GB", lambda w=weights: w),
                    cell_in("GB", lambda k=kv: k),
                    cell_in("GB", lambda w=weights, k=kv: w + k),
                ],
            }
        )
    return {"headers": [header(n, "GB") for n in ("weights", "KV cache", "total")], "rows": rows}


def _bubble_table(ev: Evaluator) -> dict:
    rows = [
        {
            "stages": str(p),
            "cells": [
                cell_in(
                    "dimensionless",
                    lambda p=p, m=m: ev.q(
                        "pipeline_bubble_fraction", pipeline_stages=Q_(p, "stage"), microbatches=m
                    ),
                )
                for m in MICROBATCHES
            ],
        }
        for p in STAGES
    ]
    return {"headers": [f"m = {m}" for m in MICROBATCHES], "rows": rows}


TRAIN_MODEL = "llama_3_1_70b"
TRAIN_CHIP = "h100_sxm"


def _training_memory(presets: Presets) -> dict:
    """Training memory of one replica of a dense model, one sequence at the default context:
    state (16 bytes per parameter), activations with and without recompute."""
    ev = Evaluator(presets, TRAIN_CHIP, TRAIN_MODEL)
    one = {"batch_size": Q_(1, "sequence")}
    per_param = sum(
        presets.parameter[p].value
        for p in ("train_weight_bytes", "train_grad_bytes", "optimizer_bytes")
    )
    state = ev.q("training_state_memory")
    hbm = presets.get("hardware", TRAIN_CHIP).hbm_capacity
    return {
        "training": {
            "model": presets.get("model", TRAIN_MODEL).name,
            "chip": presets.get("hardware", TRAIN_CHIP).name,
            "bytes_per_param": quantity(per_param),
            "state": quantity(state.to("GB")),
            "state_chips": quantity((state / hbm).to("") * Q_(1, "chip")),
            "activations": ev.text("full_activation_memory", **one),
            "activations_recompute": ev.text("activation_memory", **one),
            "total": ev.text("training_memory", **one),
            "total_recompute": ev.text("training_memory_recompute", **one),
        }
    }
