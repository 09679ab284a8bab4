"""Inference engines' own outputs as run records (`ingest`): ingest.py (files -> records, the kind
detected by content), vllm.py (`vllm bench` result files, and SGLang's), identity.py (the config
keys that define a workload, from the command, the log and `--config`), logs.py (KV-cache
capacity from the server logs), traces.py (the engine's profiler output as a run's trace set),
record.py (EngineRecord: a record in the making and what ingest knows beside it)."""
