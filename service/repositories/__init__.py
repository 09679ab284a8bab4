"""The queries and row writes of what no one concept owns; use cases call these with their
session: series.py (series rows), summaries.py (stored summaries), tokens.py, views.py (the
dashboard pages' bounded reads), upkeep.py (planner statistics). Each concept's own are in its
folder as queries.py (service/runs/queries.py, service/history/queries.py, ...)."""
