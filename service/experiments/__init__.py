"""Interleaved A/B experiments and bisect, in one place: routes.py (/api/v1/experiments/{id}),
schemas.py (its body), tables.py (an experiment's stored plan: the looks and the question it
was planned with; written at ingest and read by service/runs/queries_plans.py), blocks.py (an
experiment's runs by arm and block and its blocked verdict), bisect.py (`perfwarden bisect`:
the first commit whose runs regress against the good commit's)."""
