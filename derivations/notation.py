"""Every symbol of the notation, declared once with its unit, meaning and LaTeX.

FLOP, byte, second, USD, token and sequence are independent dimensions, so the hidden factors of
the lecture show up as named constants with units (u, nu, nu_KV, sigma, D_0); the other counts
(parameters, chips, layers, values, vectors) are dimensionless named units.

>>> flops_per_param_token.value
<Quantity(2.0, 'FLOP / parameter / token')>
"""

from derivations.core import constant, counts, symbol

# -- constants ---------------------------------------------------------------------------------
flops_per_param_token = constant(
    "flops_per_param_token",
    "2 FLOP/parameter/token",
    "FLOPs per parameter per token in a forward pass: one multiply and one add",
    r"c_{\mathrm{fwd}}",
    "a matrix-vector product does one multiply-add (2 FLOP) per weight per token",
)

decode_tokens_per_sequence = constant(
    "decode_tokens_per_sequence",
    "1 token/sequence",
    "tokens one decode step gives each sequence of the batch: one (the lecture's hidden factor "
    "that turns B sequences into B tokens per step)",
    r"u",
    "a decode step appends one token to every sequence in the batch (no speculative decoding)",
)

vectors_per_token = constant(
    "vectors_per_token",
    "1 vector/token",
    "vectors of d values one token carries: one (its residual-stream vector, or its row of an "
    "embedding matrix); the hidden factor that turns a width in values into values per token",
    r"\nu",
    "a transformer represents each token by one residual-stream vector per layer",
)
kv_vectors_per_token = constant(
    "kv_vectors_per_token",
    "2 vector/token",
    "vectors the KV cache keeps per token of context, per layer and KV head: two (a key and a "
    "value), the lecture's factor of 2",
    r"\nu_{\mathrm{KV}}",
    "attention caches one key and one value vector per token, layer and KV head",
)
sequences_per_token = constant(
    "sequences_per_token",
    "1 sequence/token",
    "sequences a token belongs to and attends within: one (its own); the hidden factor that "
    "turns a context in tokens per sequence into the tokens one query sees",
    r"\sigma",
    "attention never crosses sequences: a token attends only to tokens of its own sequence",
)

# -- hardware ----------------------------------------------------------------------------------
flops = symbol(
    "flops", "FLOP/s", "dense FLOP/s of one chip at the compute precision", r"F", display="TFLOP/s"
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
kv_bytes_per_token = symbol(
    "kv_bytes_per_token",
    "byte/token",
    "KV-cache bytes per token of context, one sequence, all layers",
    r"k_{\mathrm{KV}}",
    display="kB/token",
)
weight_bytes_per_value = symbol(
    "weight_bytes_per_value",
    "byte/value",
    "bytes per stored weight, at the weight precision",
    r"b_{\mathrm{w}}",
)
kv_bytes_per_value = symbol(
    "kv_bytes_per_value",
    "byte/value",
    "bytes per value stored in the KV cache, at the KV-cache precision",
    r"b_{\mathrm{KV}}",
)
activation_bytes_per_value = symbol(
    "activation_bytes_per_value",
    "byte/value",
    "bytes per activation value sent or stored, at the compute precision",
    r"b_{\mathrm{act}}",
)
combine_bytes_per_value = symbol(
    "combine_bytes_per_value",
    "byte/value",
    "bytes per value an expert's output carries back to its token (the all-to-all's combine), "
    "at the combine precision",
    r"b_{\mathrm{comb}}",
)

# -- workload ----------------------------------------------------------------------------------
# B counts the sequences of a decode step and of a training step alike: one meaning for both
batch_size = symbol(
    "batch_size",
    "sequence",
    "sequences in the batch, processed together each step (in decoding, one new token each)",
    r"B",
)
context_length = symbol(
    "context_length",
    "token/sequence",
    "tokens of context per sequence",
    r"L_{\mathrm{ctx}}",
    display="token/sequence",
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
compute_bound_batch = symbol(
    "compute_bound_batch",
    "sequence",
    "batch size from which a decode step is compute-bound, the KV cache's reads included",
    r"B^{*}_{\mathrm{KV}}",
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
routed_expert_params = symbol(
    "routed_expert_params",
    "parameter",
    "parameters of all routed experts, every MoE layer (counted from the architecture)",
    r"N_{\mathrm{routed}}",
    display="Gparameter",
)
routed_weight_share = symbol(
    "routed_weight_share",
    "dimensionless",
    "share of the weights that sit in routed experts (0 for a dense model)",
    r"s_{\mathrm{routed}}",
)
expert_read_fraction = symbol(
    "expert_read_fraction",
    "dimensionless",
    "expected share of a layer's routed experts that a batch of B tokens touches",
    r"\phi_{B}",
)
experts_touched = symbol(
    "experts_touched",
    "expert",
    "expected distinct routed experts a batch touches per MoE layer",
    r"E_{B}",
)
expert_saturation_batch = symbol(
    "expert_saturation_batch",
    "sequence",
    "batch at which each routed expert expects one token: routed experts over experts per token",
    r"B_{\mathrm{sat}}",
)
attention_flops_per_token = symbol(
    "attention_flops_per_token",
    "FLOP/token",
    "decode attention FLOPs a new token spends per token of context (by attention type)",
    r"a_{\mathrm{dec}}",
    display="MFLOP/token",
)
sequence_token_rate = symbol(
    "sequence_token_rate",
    "token/s/sequence",
    "tokens per second each sequence of the batch receives (a replica's throughput per sequence)",
    r"\left(\Theta / B\right)",
)

dense_crossover_batch = symbol(
    "dense_crossover_batch",
    "sequence",
    "multiplies per byte of weight (FLOP rate times bytes per weight, over FLOPs per "
    "multiply-add times bandwidth): the crossover batch of a dense model, at any precision",
    r"B^{*}_{\mathrm{dense}}",
)

# -- intermediates named only inside derivations -----------------------------------------------
step_flops = symbol("step_flops", "FLOP", "FLOPs of one decode step", r"\Phi_{\mathrm{step}}")
weight_bytes = symbol(
    "weight_bytes", "byte", "bytes of all the weights", r"M_{\mathrm{weights}}", display="GB"
)
kv_bytes = symbol("kv_bytes", "byte", "bytes of the batch's KV cache", r"M_{\mathrm{KV}}", "GB")
step_rent = symbol("step_rent", "USD", "rent for the chips during one step", r"R_{\mathrm{step}}")
tokens_per_step = symbol(
    "tokens_per_step", "token", "tokens generated in one step", r"N_{\mathrm{tok}}"
)

# -- model architecture (read from a model preset's fields) ------------------------------------
n_layers = symbol("n_layers", "layer", "transformer layers", r"n_{\mathrm{layers}}")
d_model = symbol("d_model", "value", "width of the residual stream", r"d")
n_heads = symbol("n_heads", "head", "query heads per layer", r"h")
n_kv_heads = symbol("n_kv_heads", "head", "key/value heads per layer (GQA)", r"h_{\mathrm{KV}}")
head_dim = symbol("head_dim", "value/head", "values per attention head", r"d_{h}")
kv_lora_rank = symbol(
    "kv_lora_rank", "value", "MLA's compressed KV latent per layer", r"r_{\mathrm{KV}}"
)
qk_rope_head_dim = symbol(
    "qk_rope_head_dim", "value", "MLA's shared rotary key per layer", r"d_{\mathrm{rope}}"
)
qk_nope_head_dim = symbol(
    "qk_nope_head_dim",
    "value",
    "MLA's per-head key width without rotary part",
    r"d_{\mathrm{nope}}",
)
v_head_dim = symbol("v_head_dim", "value", "MLA's per-head value width", r"d_{v}")
q_lora_rank = symbol("q_lora_rank", "value", "MLA's compressed query width", r"r_{Q}")
d_ff = symbol("d_ff", "value", "hidden width of a dense layer's gated MLP", r"d_{\mathrm{ff}}")
d_ff_expert = symbol(
    "d_ff_expert", "value", "hidden width of one expert's gated MLP", r"d_{\mathrm{e}}"
)
experts_routed = symbol("experts_routed", "expert", "routed experts per MoE layer", r"E_{r}")
experts_active = symbol("experts_active", "expert", "routed experts each token is sent to", r"k")
experts_shared = symbol("experts_shared", "expert", "shared experts every token uses", r"E_{s}")
dense_layers = symbol(
    "dense_layers", "layer", "layers with a dense MLP instead of experts", r"n_{\mathrm{dense}}"
)
sliding_window_layers = symbol(
    "sliding_window_layers",
    "layer",
    "layers that attend only to a short sliding window",
    r"n_{\mathrm{SWA}}",
)
vocab = symbol("vocab", "token", "vocabulary size", r"V")
embeddings_active = symbol(
    "embeddings_active",
    "dimensionless",
    "embedding matrices counted as active (2: input and output; 1: output only)",
    r"e_{\mathrm{act}}",
)
ffn_matrices = constant(
    "ffn_matrices",
    "3",
    "weight matrices of a gated (SwiGLU) MLP: gate, up and down",
    r"m_{\mathrm{ff}}",
    "the gated MLP of every model preset (Llama, Qwen, Mixtral, DeepSeek, Kimi, gpt-oss)",
)
embedding_matrices = symbol(
    "embedding_matrices",
    "dimensionless",
    "embedding matrices stored (2: input and output; 1: tied, one matrix shared by both)",
    r"e_{\mathrm{mat}}",
)

# -- long context and KV cache (chapter F) -----------------------------------------------------
global_layers = symbol(
    "global_layers", "layer", "layers that attend to the whole context", r"n_{\mathrm{global}}"
)
kv_values_per_token = symbol(
    "kv_values_per_token",
    "value/token",
    "KV-cache values per token of context, all layers (by the model's attention type)",
    r"v_{\mathrm{KV}}",
)
gqa_kv_values = symbol(
    "gqa_kv_values",
    "value/token",
    "KV values per token under grouped-query attention (MHA and MQA included)",
    r"v_{\mathrm{GQA}}",
)
mla_kv_values = symbol(
    "mla_kv_values",
    "value/token",
    "KV values per token under multi-head latent attention",
    r"v_{\mathrm{MLA}}",
)
attention_params = symbol(
    "attention_params",
    "parameter",
    "attention weights per layer (by the model's attention type)",
    r"P_{\mathrm{attn}}",
)
gqa_attention_params = symbol(
    "gqa_attention_params",
    "parameter",
    "attention weights per layer under GQA: Q, K, V and output projections",
    r"P_{\mathrm{GQA}}",
)
mla_attention_params = symbol(
    "mla_attention_params",
    "parameter",
    "attention weights per layer under MLA: low-rank Q and KV, up-projections, output",
    r"P_{\mathrm{MLA}}",
)
arch_params_total = symbol(
    "arch_params_total",
    "parameter",
    "total parameters counted from the architecture",
    r"N_{\mathrm{total}}^{\mathrm{arch}}",
    display="Gparameter",
)
arch_params_active = symbol(
    "arch_params_active",
    "parameter",
    "active parameters per token counted from the architecture",
    r"N_{\mathrm{active}}^{\mathrm{arch}}",
    display="Gparameter",
)
kv_compute_context = symbol(
    "kv_compute_context",
    "token/sequence",
    "context length at which KV-fetch time equals compute time",
    r"L_{\mathrm{KV}=\mathrm{compute}}",
    display="ktoken/sequence",
)
kv_weight_context = symbol(
    "kv_weight_context",
    "token/sequence",
    "context length at which KV-fetch time equals weight-fetch time",
    r"L_{\mathrm{KV}=\mathrm{weights}}",
    display="ktoken/sequence",
)
price_kink_context = symbol(
    "price_kink_context",
    "token/sequence",
    "context length at which a price list steps up",
    r"L_{\mathrm{kink}}",
    display="ktoken/sequence",
)
implied_kv_bytes_per_token = symbol(
    "implied_kv_bytes_per_token",
    "byte/token",
    "KV bytes per token implied by a price kink",
    r"\hat{k}_{\mathrm{KV}}",
    display="kB/token",
)
input_price = symbol(
    "input_price", "USD/token", "API price of an input token", r"p_{\mathrm{in}}", "USD/Mtoken"
)
output_price = symbol(
    "output_price", "USD/token", "API price of an output token", r"p_{\mathrm{out}}", "USD/Mtoken"
)
cache_read_price = symbol(
    "cache_read_price",
    "USD/token",
    "API price of an input token read from the cache",
    r"p_{\mathrm{hit}}",
    "USD/Mtoken",
)
decode_prefill_ratio = symbol(
    "decode_prefill_ratio",
    "dimensionless",
    "chip time per output token over chip time per input token, as priced",
    r"\rho_{\mathrm{dec}}",
)
cache_discount = symbol(
    "cache_discount",
    "dimensionless",
    "how many times cheaper a cached input token is than an uncached one",
    r"\rho_{\mathrm{hit}}",
)
prefill_time_per_token = symbol(
    "prefill_time_per_token",
    "s/token",
    "chip time of one input token (prefill, compute-bound)",
    r"t_{\mathrm{in}}",
)
decode_time_per_token = symbol(
    "decode_time_per_token",
    "s/token",
    "chip time of one output token (decode)",
    r"t_{\mathrm{out}}",
)
fast_price_multiplier = symbol(
    "fast_price_multiplier",
    "dimensionless",
    "fast mode's price over the standard price",
    r"m_{\mathrm{price}}",
)
fast_speed_multiplier = symbol(
    "fast_speed_multiplier",
    "dimensionless",
    "fast mode's tokens per second per sequence over the standard",
    r"m_{\mathrm{speed}}",
)
fast_batch_ratio = symbol(
    "fast_batch_ratio",
    "dimensionless",
    "fast mode's batch size over the standard batch size",
    r"\left(B_{\mathrm{fast}} / B\right)",
)
fast_batch_size = symbol(
    "fast_batch_size", "sequence", "batch size in fast mode", r"B_{\mathrm{fast}}"
)
fast_step_time = symbol(
    "fast_step_time", "s", "step time in fast mode", r"T_{\mathrm{fast}}", display="ms"
)
tier_capacity = symbol(
    "tier_capacity", "byte", "capacity of one memory device", r"C_{\mathrm{tier}}", "GB"
)
tier_bandwidth = symbol(
    "tier_bandwidth", "byte/s", "read bandwidth of one memory device", r"W_{\mathrm{tier}}", "GB/s"
)
tier_fill_fraction = symbol(
    "tier_fill_fraction",
    "dimensionless",
    "fraction of the device's capacity the caches occupy",
    r"\phi",
)
tier_drain_time = symbol(
    "tier_drain_time",
    "s",
    "time to read the whole device once: how long a cache on it is worth holding",
    r"t_{\mathrm{tier}}",
    display="s",
)
tier_price = symbol(
    "tier_price",
    "USD/byte/hour",
    "price of holding one byte in the tier for an hour",
    r"p_{\mathrm{tier}}",
    display="USD/GB/hour",
)
cache_hold_cost = symbol(
    "cache_hold_cost",
    "USD/hour/sequence",
    "cost of holding one sequence's KV cache in a tier",
    r"c_{\mathrm{hold}}",
)
cache_recompute_cost = symbol(
    "cache_recompute_cost",
    "USD/sequence",
    "cost of recomputing one sequence's KV cache (a prefill)",
    r"c_{\mathrm{remat}}",
)
cache_readback_cost = symbol(
    "cache_readback_cost",
    "USD/sequence",
    "cost of reading one sequence's KV cache back from a tier (the chips' rent while they wait)",
    r"c_{\mathrm{read}}",
)
cache_breakeven_time = symbol(
    "cache_breakeven_time",
    "s",
    "holding time at which holding a cache and reading it back costs as much as recomputing it",
    r"t_{\mathrm{even}}",
    display="minute",
)
flops_per_multiply_add = constant(
    "flops_per_multiply_add",
    "2 FLOP",
    "FLOPs of one multiply-add",
    r"c_{\mathrm{MAC}}",
    "a multiply and an add, as in c_fwd",
)
gqa_attention_flops = symbol(
    "gqa_attention_flops",
    "FLOP/token",
    "GQA attention FLOPs per token of context for one query token: QK and AV per query head",
    r"a_{\mathrm{GQA}}",
    display="MFLOP/token",
)
mla_decode_attention_flops = symbol(
    "mla_decode_attention_flops",
    "FLOP/token",
    "MLA decode attention FLOPs per token of context, weights absorbed into the latent",
    r"a_{\mathrm{MLA}}",
    display="MFLOP/token",
)
mla_prefill_attention_flops = symbol(
    "mla_prefill_attention_flops",
    "FLOP/token",
    "MLA prefill attention FLOPs per token of context, keys and values expanded per head",
    r"a_{\mathrm{MLA}}^{\mathrm{pre}}",
    display="MFLOP/token",
)
prefill_attention_flops = symbol(
    "prefill_attention_flops",
    "FLOP/token",
    "prefill attention FLOPs per (query, key) pair of tokens (by attention type)",
    r"a_{\mathrm{pre}}",
    display="MFLOP/token",
)
decode_attention_context = symbol(
    "decode_attention_context",
    "token/sequence",
    "context at which a decode token's attention FLOPs equal its weight FLOPs",
    r"L_{\mathrm{attn}}",
    display="ktoken/sequence",
)
prefill_attention_context = symbol(
    "prefill_attention_context",
    "token/sequence",
    "prompt length at which causal prefill's attention FLOPs per token equal its weight FLOPs",
    r"L_{\mathrm{attn}}^{\mathrm{pre}}",
    display="ktoken/sequence",
)
prefill_flops_per_token = symbol(
    "prefill_flops_per_token",
    "FLOP/token",
    "average FLOPs per token of a causal prefill of L tokens (weights and attention)",
    r"\Phi_{\mathrm{pre}}",
    display="GFLOP/token",
)
tier_retrieval_time = symbol(
    "tier_retrieval_time",
    "s",
    "time to read back the caches a device holds",
    r"t_{\mathrm{retrieve}}",
    display="s",
)
cache_write_price = symbol(
    "cache_write_price",
    "USD/token",
    "API price of an input token written to the prompt cache",
    r"p_{\mathrm{write}}",
    "USD/Mtoken",
)
cache_lifetime = symbol(
    "cache_lifetime", "s", "how long a written prompt cache is kept", r"t_{\mathrm{life}}", "minute"
)
cache_write_premium = symbol(
    "cache_write_premium",
    "USD/token",
    "extra price of writing an input token to the cache, over the plain input price",
    r"\Delta p_{\mathrm{write}}",
    "USD/Mtoken",
)
cache_premium_over_hold = symbol(
    "cache_premium_over_hold",
    "dimensionless",
    "cache-write premium over the cost of holding that token's KV cache for the cache lifetime",
    r"\rho_{\mathrm{write}}",
)

# -- MoE on racks (chapter B) ------------------------------------------------------------------
expert_parallel_chips = symbol(
    "expert_parallel_chips", "chip", "chips one expert layer is spread over", r"n_{\mathrm{EP}}"
)
experts_per_chip = symbol(
    "experts_per_chip", "expert/chip", "routed experts held by each chip", r"e_{\mathrm{chip}}"
)
alltoall_bytes = symbol(
    "alltoall_bytes",
    "byte/token",
    "bytes one token sends and receives in one MoE layer (dispatch and combine)",
    r"a_{\mathrm{A2A}}",
)
dispatch_bytes = symbol(
    "dispatch_bytes", "byte/token", "bytes one token sends to its experts", r"a_{\mathrm{disp}}"
)
combine_bytes = symbol(
    "combine_bytes",
    "byte/token",
    "bytes one token gets back from its experts",
    r"a_{\mathrm{comb}}",
)
racks_spanned = symbol("racks_spanned", "rack", "racks one expert layer spans", r"r")
offrack_fraction = symbol(
    "offrack_fraction",
    "dimensionless",
    "fraction of a token's expert traffic that leaves its rack",
    r"f_{\mathrm{out}}",
)
scale_up_domain = symbol(
    "scale_up_domain", "chip", "chips in one scale-up (NVLink-class) domain", r"D"
)
scale_up_bandwidth = symbol(
    "scale_up_bandwidth",
    "byte/s",
    "scale-up bandwidth of one chip, each direction",
    r"S_{\mathrm{up}}",
    display="GB/s",
)
scale_out_bandwidth = symbol(
    "scale_out_bandwidth",
    "byte/s",
    "scale-out (network) bandwidth of one chip, each direction",
    r"S_{\mathrm{out}}",
    display="GB/s",
)
scale_out_penalty = symbol(
    "scale_out_penalty",
    "dimensionless",
    "how many times slower scale-out is than scale-up",
    r"\kappa",
)
hardware_scale_out_penalty = symbol(
    "hardware_scale_out_penalty",
    "dimensionless",
    "a chip's scale-up bandwidth over its scale-out bandwidth",
    r"\kappa_{\mathrm{hw}}",
)
alltoall_time = symbol(
    "alltoall_time",
    "s",
    "time of one MoE layer's all-to-all for the batch",
    r"t_{\mathrm{A2A}}",
    display="ms",
)
multi_rack_slowdown = symbol(
    "multi_rack_slowdown",
    "dimensionless",
    "all-to-all time over r racks relative to one rack",
    r"\sigma_{r}",
)
scaleup_hbm = symbol(
    "scaleup_hbm", "byte", "HBM of a whole scale-up domain", r"C_{\mathrm{domain}}", display="TB"
)
scaleup_param_capacity = symbol(
    "scaleup_param_capacity",
    "parameter",
    "parameters a scale-up domain's HBM can hold",
    r"N_{\max}",
    display="Tparameter",
)
compute_cost_floor = symbol(
    "compute_cost_floor",
    "USD/token",
    "cost per token once compute-bound",
    r"c_{\mathrm{floor}}",
    display="USD/Mtoken",
)

# -- pipelining and memory (chapters C and D) --------------------------------------------------
pipeline_stages = symbol("pipeline_stages", "stage", "pipeline stages", r"P")
micro_batch = symbol(
    "micro_batch", "sequence", "sequences in one micro-batch (one stage's batch)", r"b_{\mu}"
)
memory_per_chip = symbol(
    "memory_per_chip",
    "byte",
    "HBM each chip needs for its weights and KV cache",
    r"c_{\mathrm{mem}}",
    display="GB",
)
layers_per_stage = symbol("layers_per_stage", "layer", "layers in one pipeline stage", r"\ell")
scaleup_time_per_token = symbol(
    "scaleup_time_per_token",
    "s/token",
    "scale-up time one token spends in a stage's all-to-alls",
    r"t_{\mathrm{scaleup}}",
)
scaleout_time_per_token = symbol(
    "scaleout_time_per_token",
    "s/token",
    "scale-out time one token spends moving to the next stage",
    r"t_{\mathrm{scaleout}}",
)
traffic_time_ratio = symbol(
    "traffic_time_ratio",
    "dimensionless",
    "scale-up time over scale-out time per token and stage",
    r"\left(t_{\mathrm{scaleup}} / t_{\mathrm{scaleout}}\right)",
)
hop_latency = symbol(
    "hop_latency", "s", "latency of one hop between pipeline stages", r"t_{\mathrm{hop}}", "ms"
)
pipelined_latency = symbol(
    "pipelined_latency",
    "s",
    "time per generated token with the pipeline's hops added",
    r"t_{\mathrm{pipe}}",
    display="ms",
)
domain_weight_fetch_time = symbol(
    "domain_weight_fetch_time",
    "s",
    "time for a whole scale-up domain to read every weight once",
    r"t_{\mathrm{weights}}^{\mathrm{domain}}",
    display="ms",
)
microbatches = symbol("microbatches", "dimensionless", "micro-batches per training step", r"m")
bubble_fraction = symbol(
    "bubble_fraction",
    "dimensionless",
    "fraction of a training step the pipeline stands idle (fill and drain)",
    r"\beta_{\mathrm{bubble}}",
)
microbatch_time = symbol(
    "microbatch_time", "s", "time of one stage on one micro-batch", r"t_{\mu}", display="ms"
)
pipeline_step_time = symbol(
    "pipeline_step_time",
    "s",
    "time of one training step through the pipeline",
    r"T_{\mathrm{pipe}}",
)
moe_layers_per_stage = symbol(
    "moe_layers_per_stage",
    "layer",
    "MoE layers in one pipeline stage (dense layers left out)",
    r"\ell_{\mathrm{MoE}}",
)
train_weight_bytes = symbol(
    "train_weight_bytes",
    "byte/parameter",
    "bytes per parameter of the working weights in training (BF16)",
    r"b_{\mathrm{w}}^{\mathrm{train}}",
)
train_grad_bytes = symbol(
    "train_grad_bytes", "byte/parameter", "bytes per parameter of the gradients (BF16)", r"b_{g}"
)
optimizer_bytes = symbol(
    "optimizer_bytes",
    "byte/parameter",
    "bytes per parameter of the optimizer state (Adam: FP32 master weights and two moments)",
    r"b_{\mathrm{opt}}",
)
training_state_memory = symbol(
    "training_state_memory",
    "byte",
    "weights, gradients and optimizer state of one training replica",
    r"M_{\mathrm{state}}",
    display="GB",
)
activation_bytes_factor = symbol(
    "activation_bytes_factor",
    "byte/value",
    "activation bytes a layer stores per residual-stream value without recomputation",
    r"c_{\mathrm{act}}",
)
gated_activation_bytes_factor = symbol(
    "gated_activation_bytes_factor",
    "byte/value",
    "activation bytes a gated-MLP, grouped-query layer (Llama's) stores per residual-stream "
    "value without recomputation",
    r"c_{\mathrm{act}}^{\mathrm{gated}}",
)
full_activation_memory = symbol(
    "full_activation_memory",
    "byte",
    "activations stored for the backward pass without recomputation, all layers",
    r"M_{\mathrm{act}}^{\mathrm{full}}",
    display="GB",
)
training_memory = symbol(
    "training_memory",
    "byte",
    "memory of one training replica without recomputation: state plus every activation",
    r"M_{\mathrm{train}}",
    display="GB",
)
training_memory_recompute = symbol(
    "training_memory_recompute",
    "byte",
    "memory of one training replica with full recomputation: state plus each layer's input",
    r"M_{\mathrm{train}}^{\mathrm{remat}}",
    display="GB",
)

# -- over-training and RL (chapter E) ----------------------------------------------------------
training_tokens = symbol(
    "training_tokens", "token", "pre-training tokens", r"D_{\mathrm{pre}}", display="Ttoken"
)
training_flops = symbol(
    "training_flops", "FLOP", "pre-training compute", r"C_{\mathrm{pre}}", display="YFLOP"
)
forward_flops = symbol(
    "forward_flops", "FLOP", "compute of the forward passes", r"C_{\mathrm{fwd}}"
)
backward_flops = symbol(
    "backward_flops", "FLOP", "compute of the backward passes", r"C_{\mathrm{bwd}}"
)
rl_tokens = symbol("rl_tokens", "token", "RL tokens (rollouts)", r"D_{\mathrm{RL}}", "Ttoken")
rl_flops_per_param_token = symbol(
    "rl_flops_per_param_token",
    "FLOP/parameter/token",
    "FLOPs per active parameter per RL token",
    r"c_{\mathrm{RL}}",
)
rl_inefficiency = symbol(
    "rl_inefficiency", "dimensionless", "RL's inefficiency factor (1 / MFU)", r"\eta_{\mathrm{RL}}"
)
rl_flops = symbol("rl_flops", "FLOP", "RL compute", r"C_{\mathrm{RL}}", display="YFLOP")
inference_tokens = symbol(
    "inference_tokens", "token", "tokens served over the deployment", r"D_{\mathrm{inf}}", "Ttoken"
)
inference_inefficiency = symbol(
    "inference_inefficiency",
    "dimensionless",
    "inference's inefficiency factor (1 / MFU)",
    r"\eta_{\mathrm{inf}}",
)
inference_flops = symbol(
    "inference_flops", "FLOP", "inference compute", r"C_{\mathrm{inf}}", display="YFLOP"
)
inference_rate = symbol(
    "inference_rate", "token/s", "tokens per second served by one model", r"R", "Mtoken/s"
)
deployment_time = symbol(
    "deployment_time", "s", "how long a model is served", r"T_{\mathrm{dep}}", display="day"
)
cost_a = symbol("cost_a", "FLOP", "the first of two costs whose product is fixed", r"a")
cost_product = symbol("cost_product", "FLOP**2", "the fixed product of the two costs", r"K")
total_cost = symbol("total_cost", "FLOP", "the sum of the two costs", r"S")
balanced_cost = symbol(
    "balanced_cost", "FLOP", "the first cost at the minimum of the sum", r"a^{*}"
)
pretrain_rl_token_ratio = symbol(
    "pretrain_rl_token_ratio",
    "dimensionless",
    "pre-training tokens per RL token when the two cost the same",
    r"\left(D_{\mathrm{pre}} / D_{\mathrm{RL}}\right)",
)
pretrain_inference_token_ratio = symbol(
    "pretrain_inference_token_ratio",
    "dimensionless",
    "pre-training tokens per inference token when the two cost the same",
    r"\left(D_{\mathrm{pre}} / D_{\mathrm{inf}}\right)",
)
balanced_training_tokens = symbol(
    "balanced_training_tokens",
    "token",
    "pre-training tokens that cost as much as the deployment's inference",
    r"D_{\mathrm{pre}}^{\mathrm{eq}}",
    display="Ttoken",
)
chinchilla_tokens_per_param = symbol(
    "chinchilla_tokens_per_param",
    "token/parameter",
    "compute-optimal training tokens per parameter",
    r"\rho_{\mathrm{C}}",
)
chinchilla_tokens = symbol(
    "chinchilla_tokens",
    "token",
    "compute-optimal training tokens for the active parameters",
    r"D_{\mathrm{C}}",
    display="Ttoken",
)
overtraining_factor = symbol(
    "overtraining_factor",
    "dimensionless",
    "training tokens over the compute-optimal count",
    r"\omega",
)
balanced_overtraining_factor = symbol(
    "balanced_overtraining_factor",
    "dimensionless",
    "over-training factor when pre-training costs as much as inference",
    r"\omega^{\mathrm{eq}}",
)
loss = symbol("loss", "dimensionless", "pre-training loss (nats per token)", r"\mathcal{L}")
loss_irreducible = symbol("loss_irreducible", "dimensionless", "irreducible loss", r"\mathcal{E}")
loss_param_coeff = symbol("loss_param_coeff", "dimensionless", "parameter term's scale", r"A")
loss_data_coeff = symbol("loss_data_coeff", "dimensionless", "data term's scale", r"\mathcal{B}")
fit_token_unit = constant(
    "fit_token_unit",
    "1 token",
    "the unit the loss fits count training tokens in: D / D_0 is the pure number a power law "
    "can raise (a count of tokens cannot be raised to the power beta)",
    r"D_{0}",
    "Hoffmann et al. 2022 and Besiroglu et al. 2024 fit the loss with D counted in tokens",
)
loss_param_exponent = symbol(
    "loss_param_exponent", "dimensionless", "parameter term's exponent", r"\alpha"
)
loss_data_exponent = symbol("loss_data_exponent", "dimensionless", "data term's exponent", r"\beta")
loss_slope = symbol(
    "loss_slope",
    "1/parameter",
    "derivative of the loss along the compute budget's curve",
    r"\left(\partial \mathcal{L} / \partial N\right)",
)
optimal_params = symbol(
    "optimal_params",
    "parameter",
    "compute-optimal parameters for a compute budget",
    r"N^{*}",
    display="Gparameter",
)
optimal_tokens = symbol(
    "optimal_tokens",
    "token",
    "compute-optimal training tokens for a compute budget",
    r"D^{*}",
    display="Ttoken",
)
training_chips = symbol("training_chips", "chip", "chips training the model", r"n_{\mathrm{train}}")
mfu = symbol(
    "mfu",
    "dimensionless",
    "model FLOPs utilisation: useful training FLOP/s over the chips' dense peak",
    r"\operatorname{MFU}",
)
training_time = symbol(
    "training_time", "s", "wall-clock time of pre-training", r"T_{\mathrm{train}}", display="day"
)
training_chip_hours = symbol(
    "training_chip_hours",
    "chip*hour",
    "chip-hours spent on pre-training",
    r"H_{\mathrm{train}}",
    display="chip*hour",
)

# -- reversible networks (chapter G) -----------------------------------------------------------
feistel_x = symbol("feistel_x", "value", "left half of a Feistel block's input", r"x")
feistel_y = symbol("feistel_y", "value", "right half of a Feistel block's input", r"y")
feistel_z = symbol("feistel_z", "value", "right half of the block's output, y + f(x)", r"z")
revnet_x = symbol(
    "revnet_x", "value", "first stream entering a reversible block", r"x_{\mathrm{in}}"
)
revnet_y = symbol(
    "revnet_y", "value", "second stream entering a reversible block", r"y_{\mathrm{in}}"
)
revnet_x_next = symbol("revnet_x_next", "value", "first stream after a reversible block", r"x'")
revnet_y_next = symbol(
    "revnet_y_next", "value", "second stream after a reversible block (a copy of x)", r"y'"
)
layer_activation_bytes = symbol(
    "layer_activation_bytes",
    "byte/token/layer",
    "activation bytes stored per token per layer for the backward pass",
    r"a_{\mathrm{layer}}",
)
activation_memory = symbol(
    "activation_memory",
    "byte",
    "activations stored for the backward pass, all layers",
    r"M_{\mathrm{act}}",
    display="GB",
)
revnet_activation_memory = symbol(
    "revnet_activation_memory",
    "byte",
    "activations a reversible network stores (the last layer's only)",
    r"M_{\mathrm{act}}^{\mathrm{rev}}",
    display="MB",
)
revnet_training_flops = symbol(
    "revnet_training_flops",
    "FLOP",
    "training compute with every activation recomputed on the way back",
    r"C_{\mathrm{rev}}",
    display="YFLOP",
)
recompute_flops = symbol(
    "recompute_flops", "FLOP", "compute of recomputing the activations", r"C_{\mathrm{recompute}}"
)
checkpoint_activation_memory = symbol(
    "checkpoint_activation_memory",
    "byte",
    "activations stored with the best (square-root) activation checkpointing",
    r"M_{\mathrm{act}}^{\mathrm{ckpt}}",
    display="GB",
)

# -- more intermediates named only inside derivations ------------------------------------------
home_rack_share = symbol(
    "home_rack_share",
    "dimensionless",
    "probability that a token's expert sits in the token's own rack",
    r"p_{\mathrm{home}}",
)
cache_bytes = symbol(
    "cache_bytes",
    "byte/sequence",
    "bytes of one sequence's KV cache",
    r"M_{\mathrm{cache}}",
    "GB/sequence",
)
tier_cache_bytes = symbol(
    "tier_cache_bytes",
    "byte",
    "bytes of all the caches a memory device holds",
    r"M_{\mathrm{tier}}",
    "GB",
)
hop_count = symbol(
    "hop_count", "dimensionless", "hops a token makes per step", r"h_{\mathrm{hops}}"
)
expert_skip_probability = symbol(
    "expert_skip_probability",
    "dimensionless",
    "probability that one token's routing skips a given routed expert",
    r"q_{\mathrm{skip}}",
)
prefill_flops = symbol(
    "prefill_flops",
    "FLOP/sequence",
    "FLOPs of a causal prefill of one sequence of L tokens",
    r"\Phi_{\mathrm{prefill}}",
)
onrack_slowdown = symbol(
    "onrack_slowdown",
    "dimensionless",
    "time of the on-rack share of an all-to-all, relative to the one-rack time",
    r"\sigma_{\mathrm{on}}",
)
offrack_slowdown = symbol(
    "offrack_slowdown",
    "dimensionless",
    "time of the off-rack share of an all-to-all, relative to the one-rack time",
    r"\sigma_{\mathrm{off}}",
)
rack_missed_share = symbol(
    "rack_missed_share",
    "dimensionless",
    "probability that a given other rack holds none of a token's routed experts",
    r"p_{\mathrm{miss}}",
)
offrack_copies = symbol(
    "offrack_copies",
    "dimensionless",
    "copies of a token's activation that leave its rack when dispatch sends one per other "
    "rack its experts sit in (and combine returns one pre-summed)",
    r"c_{\mathrm{out}}",
)
once_per_rack_slowdown = symbol(
    "once_per_rack_slowdown",
    "dimensionless",
    "all-to-all time over r racks relative to one rack, sending one copy per other rack",
    r"\sigma_{r}^{\mathrm{once}}",
)
checkpoint_segments = symbol(
    "checkpoint_segments",
    "dimensionless",
    "segments (checkpoints) the layers are cut into for activation checkpointing",
    r"K_{\mathrm{ckpt}}",
)

# -- counts: whole numbers of their unit, at least one (a sweep rounds them) -------------------
counts(
    # hardware and workload
    n_chips,
    batch_size,
    context_length,
    scale_up_domain,
    training_chips,
    expert_parallel_chips,
    pipeline_stages,
    micro_batch,
    microbatches,
    hop_count,
    checkpoint_segments,
    # model architecture
    n_total,
    n_active,
    n_layers,
    d_model,
    n_heads,
    n_kv_heads,
    head_dim,
    kv_lora_rank,
    qk_rope_head_dim,
    qk_nope_head_dim,
    v_head_dim,
    q_lora_rank,
    d_ff,
    d_ff_expert,
    experts_routed,
    experts_active,
    experts_shared,
    dense_layers,
    sliding_window_layers,
    global_layers,
    vocab,
    embedding_matrices,
    # tokens of data
    training_tokens,
    rl_tokens,
    inference_tokens,
)
