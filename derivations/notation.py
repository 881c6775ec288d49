"""Every symbol of the notation, declared once with its unit, meaning and LaTeX.

Counts (sequences, tokens, parameters, chips, values) are dimensionless named units; FLOP, byte,
second and USD are independent dimensions, so the hidden factors of the lecture show up as
named constants with units.

>>> flops_per_param_token.value
<Quantity(2.0, 'FLOP / parameter / token')>
"""

from derivations.core import constant, symbol

# -- constants ---------------------------------------------------------------------------------
flops_per_param_token = constant(
    "flops_per_param_token",
    "2 FLOP/parameter/token",
    "FLOPs per parameter per token in a forward pass: one multiply and one add",
    r"c_{\mathrm{fwd}}",
    "a matrix-vector product does one multiply-add (2 FLOP) per weight per token",
)

# -- hardware ----------------------------------------------------------------------------------
flops = symbol(
    "flops", "FLOP/s", "dense FLOP/s of one chip at the chosen precision", r"F", display="TFLOP/s"
)
mem_bandwidth = symbol("mem_bandwidth", "byte/s", "HBM bandwidth of one chip", r"W", display="TB/s")
hbm_capacity = symbol(
    "hbm_capacity", "byte", "HBM capacity of one chip", r"C_{\mathrm{HBM}}", display="GB"
)
n_chips = symbol("n_chips", "chip", "chips serving one model replica", r"n")
price_per_chip_hour = symbol(
    "price_per_chip_hour", "USD/chip/hour", "rental price of one chip for one hour", r"p"
)

# -- model and precision -----------------------------------------------------------------------
n_total = symbol(
    "n_total",
    "parameter",
    "total parameters (all experts)",
    r"N_{\mathrm{total}}",
    display="Gparameter",
)
n_active = symbol(
    "n_active",
    "parameter",
    "parameters active per token",
    r"N_{\mathrm{active}}",
    display="Gparameter",
)
bytes_per_value = symbol(
    "bytes_per_value", "byte/value", "bytes per stored value (weights and KV cache)", r"b"
)
kv_bytes_per_token = symbol(
    "kv_bytes_per_token",
    "byte/token",
    "KV-cache bytes per token of context, one sequence, all layers",
    r"k_{\mathrm{KV}}",
    display="kB/token",
)

# -- workload ----------------------------------------------------------------------------------
batch_size = symbol(
    "batch_size", "sequence", "sequences in the batch, each getting one new token per step", r"B"
)
context_length = symbol(
    "context_length", "token", "tokens of context per sequence", r"L_{\mathrm{ctx}}"
)
train_period = symbol("train_period", "s", "time between batch departures", r"\tau", display="ms")

# -- outputs of chapter A ----------------------------------------------------------------------
compute_time = symbol(
    "compute_time",
    "s",
    "time to do one step's matrix multiplies",
    r"t_{\mathrm{compute}}",
    display="ms",
)
weight_fetch_time = symbol(
    "weight_fetch_time",
    "s",
    "time to read every weight from HBM once",
    r"t_{\mathrm{weights}}",
    display="ms",
)
kv_fetch_time = symbol(
    "kv_fetch_time",
    "s",
    "time to read the batch's KV cache from HBM",
    r"t_{\mathrm{KV}}",
    display="ms",
)
memory_time = symbol(
    "memory_time",
    "s",
    "time to read weights and KV cache from HBM",
    r"t_{\mathrm{mem}}",
    display="ms",
)
step_time = symbol("step_time", "s", "time of one decode step (lower bound)", r"T", display="ms")
cost_per_token = symbol(
    "cost_per_token",
    "USD/token",
    "rental cost of one generated token",
    r"c_{\mathrm{tok}}",
    display="USD/Mtoken",
)
crossover_batch = symbol(
    "crossover_batch",
    "sequence",
    "batch size at which compute time equals weight-fetch time",
    r"B^{*}",
)
ridge_intensity = symbol(
    "ridge_intensity",
    "FLOP/byte",
    "FLOPs the chip can do per byte it reads (the roofline ridge)",
    r"I^{*}",
)
hbm_drain_time = symbol(
    "hbm_drain_time", "s", "time to read the whole HBM once", r"t_{\mathrm{drain}}", display="ms"
)
worst_case_latency = symbol(
    "worst_case_latency",
    "s",
    "longest wait from request to finished step",
    r"t_{\mathrm{worst}}",
    display="ms",
)
wait_time = symbol(
    "wait_time", "s", "wait for the next batch departure", r"t_{\mathrm{wait}}", display="ms"
)
ride_time = symbol(
    "ride_time",
    "s",
    "time the batch's step takes once it departs",
    r"t_{\mathrm{ride}}",
    display="ms",
)
throughput = symbol(
    "throughput",
    "token/s",
    "tokens generated per second by one replica",
    r"\Theta",
    display="token/s",
)
chips_to_fit = symbol(
    "chips_to_fit",
    "chip",
    "chips whose HBM together holds the weights and the batch's KV cache",
    r"n_{\mathrm{fit}}",
)

# -- intermediates named only inside derivations -----------------------------------------------
step_flops = symbol("step_flops", "FLOP", "FLOPs of one decode step", r"\Phi_{\mathrm{step}}")
weight_bytes = symbol("weight_bytes", "byte", "bytes of all the weights", r"M_{\mathrm{weights}}")
kv_bytes = symbol("kv_bytes", "byte", "bytes of the batch's KV cache", r"M_{\mathrm{KV}}")
step_rent = symbol("step_rent", "USD", "rent for the chips during one step", r"R_{\mathrm{step}}")
tokens_per_step = symbol(
    "tokens_per_step", "token", "tokens generated in one step", r"N_{\mathrm{tok}}"
)
