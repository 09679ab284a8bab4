"""A benchmark's history, by the one history rule (service/runs/queries_filter.py): routes.py
(/api/v1/changepoints, /api/v1/noise), schemas.py (their bodies), tables.py (the evaluation
state per series and metric, and the runs waiting for evaluation), queries.py (a series'
per-run figures, the evaluation's inbox and state), reads.py (per-run figures, change points
and noise, as the pages and the API read them); the noise card is service/gate/noisecards.py."""
