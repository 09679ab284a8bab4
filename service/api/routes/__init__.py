"""The routes no one concept owns, thin: benchmarks.py (the benchmark list and its patch) and
health.py. Each concept's routes are in its folder as routes.py (service/runs/routes.py,
service/gate/routes.py, ...); only service/main.py imports them."""
