"""Runs, in one place: routes.py (/api/v1/runs: one, a batch, read, list, delete), schemas.py
(their bodies), tables.py (runs, their samples and per-metric figures), queries.py (look-ups,
the run list, deletion, many runs read at once), queries_ingest.py (a batch inserted in bulk),
ingest.py (a run record stored, retried on a concurrent first use of a key), uploads.py
(staged traces committed with their batch), reads.py (one run, a filtered page, the run page),
unknown.py (runs whose files did not say which server they measured)."""
