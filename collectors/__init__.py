"""What runs on the GPU node, without the service installed (`python -m collectors`, or the same
commands in `perfwarden`): cli/ (the commands), bench/ (the decode benchmark and its profile
passes), profile/ (nsys, the PyTorch profiler, NVTX, the watchdog), traces/ (the trace loaders and
THE trace pipeline), engines/ (vLLM and SGLang outputs, logs and traces). Modules: metrics.py (THE
metric registry), verdicts.py (the verdict words), configkeys.py (the config keys: identity,
workload, reading order), record.py (run records), experiment.py (interleaved A/B experiments),
env.py (what a run ran on), options.py (shared command-line values), errors.py (the one user-
facing error and the exit codes), report.py (the `analyze` tables), idlist.py (long id lists as
ranges), forked.py (what a forked child does first: die with its parent, let go of the sockets and
pipe ends it inherited), heap.py (a short command keeps its freed heap blocks for reuse)."""
