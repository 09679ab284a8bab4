"""The built-in decode benchmark (`perfwarden collect decode`): config.py (its settings, shared
by its processes), decode.py (the timed trials, one run record per batch size), model.py (the
MoE decode step, sharded for tensor parallelism), resident.py (the routed experts as one
resident-grid kernel), passes.py (the profile passes, one process per profiled batch size, under
the watchdog), presets.py (the `--preset` settings, the CPU runner's among them)."""
