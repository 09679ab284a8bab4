"""Alerts, in one place: a change point of a series' default-branch history that reaches people.
routes.py (/api/v1/alerts: list, acknowledge or close, the full re-evaluation), schemas.py (their
bodies), tables.py (the alerts and the re-evaluations' progress), queries.py (every query and row
write of both), lifecycle.py (alerts raised after an ingest, listed, moved between states, their
payload and issue), evaluation.py (the incremental evaluation from a stored state per series),
reevaluation.py (the full re-evaluation job), deliveries.py (the webhook and the GitHub issue,
one durable job each)."""
