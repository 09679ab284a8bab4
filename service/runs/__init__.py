"""Runs, in one place: routes.py (/api/v1/runs: one, a batch, read, list, delete), schemas.py
(their bodies), tables.py (runs, their samples and per-metric figures), queries.py (look-ups,
the run list, deletion, many runs read at once), queries_filter.py (the run filters the API, the
dashboard and the history share, THE history rule among them), queries_ingest.py (a batch
inserted in bulk), queries_plans.py (the experiments' stored plans, written at ingest), ingest.py
(a run record stored, retried on a concurrent first use of a key), unknown.py (runs whose files
did not say which server they measured). The run page's read is service/usecases/runs.py, the
staged traces of a batch service/traces/uploads.py."""
