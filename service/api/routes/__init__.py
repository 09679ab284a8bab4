"""The API's routes, thin, one module per resource under /api/v1: runs.py, traces.py,
benchmarks.py, gate.py (gate and compare), experiments.py, attribution.py, history.py (change points
and noise), curations.py (expected change points and mutes), explain.py, health.py. Each
takes its database through service/api/deps.py and calls use cases; only service/main.py imports
them. The alerts' and the baselines' routes are in their own folders (service/alerts/,
service/baselines/)."""
