"""The config keys, defined once (standard library only): which keys say what server a run
measured, which describe its workload, which its hardware, and the order people read them in."""
from __future__ import annotations

# which server a run measured: runs whose known values of one differ are never pooled or
# compared unless a request varies the key (spec/api.md, Engine identity)
SERVER_KEYS = ("model", "tp", "pp", "dp", "ep", "dcp", "quantization", "dtype", "kv_cache_dtype")
HARDWARE_KEYS = ("gpu", "gpu_count")  # part of every series' identity; never varied
IDENTITY_KEYS = SERVER_KEYS + HARDWARE_KEYS
# what an engine's output says of the workload (its series' config)
WORKLOAD_KEYS = SERVER_KEYS + ("speculative", "concurrency", "request_rate", "input_len",
                               "output_len", "batch_size")
# server settings that change the workload (the batch a step may hold, the KV page)
SERVER_WORKLOAD_KEYS = ("max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill",
                        "chunked_prefill_size", "block_size")
# the order people read them in; other keys follow, sorted
READING_ORDER = ("batch_size", "tp", "dcp", "pp", "ep", "mtp", "shared_experts", "cuda_graphs",
                 "concurrency", "request_rate", "input_len", "output_len", "dtype", "act_bits")
