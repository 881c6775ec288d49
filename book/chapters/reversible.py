"""Chapter G's context: activation memory with and without reversible blocks.

>>> from units.presets import load
>>> context(load())["model"]
'Llama 3.1 70B'
"""

from book.context import Evaluator
from book.format import number
from units import Q_
from units.presets import Presets

MODEL = "llama_3_1_70b"
TRAIN_BATCH = Q_(1, "sequence")


def context(presets: Presets) -> dict:
    ev = Evaluator(presets, model=MODEL, batch_size=TRAIN_BATCH)
    plain = ev.q("activation_memory")
    rev = ev.q("revnet_activation_memory")
    ckpt = ev.q("checkpoint_activation_memory")
    flops = Evaluator(presets, model=MODEL, training_tokens=Q_(1, "token"))
    return {
        "model": presets.get("model", MODEL).name,
        "layer_bytes": Evaluator(presets, model=MODEL).text("layer_activation_bytes"),
        "plain": ev.text("activation_memory"),
        "rev": ev.text("revnet_activation_memory"),
        "layers": str(presets.get("model", MODEL).layers),
        "saving": number((plain / rev).to("").magnitude),
        "ckpt": ev.text("checkpoint_activation_memory"),
        "ckpt_saving": number((plain / ckpt).to("").magnitude),
        "rev_over_ckpt": number((ckpt / rev).to("").magnitude),
        "extra_compute": number(
            (flops.q("revnet_training_flops") / flops.q("training_flops")).to("").magnitude
        ),
    }
