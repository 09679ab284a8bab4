"""Use cases that join concepts for the pages and the index: overview.py (the benchmark
list), standing.py (each benchmark's stored verdicts against its newest baseline), home.py (the
home page's label verdict and decisions), pages.py (the dashboard's benchmark and matrix view
models), summaries.py (stored attribution and change points), tokens.py (API tokens), runs.py (one
run, a filtered page, and the run page with its traces and baselines). With
the concepts' own logic (service/runs/, service/gate/, service/history/, ...), the only callers
of queries; routes, the dashboard, the bot and the CLI call these."""
