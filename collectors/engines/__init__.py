"""Inference engines' own outputs as run records (`ingest`): ingest.py (files -> records, the kind
detected by content), vllm.py (`vllm bench` result files, and SGLang's), identity.py (the config
keys that define a workload, from the command, the log and `--config`; what a record does not
know of its server), logs.py (KV-cache capacity from the server logs), serverlog.py (a server
log read whole: wrapped settings lines, the model loaded, tp, a speculative draft; a local model
path as the model's id), traces.py (the engine's profiler output as a run's trace set),
record.py (EngineRecord: a record in the making and what ingest knows beside it)."""
