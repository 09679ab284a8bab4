"""The only code that queries the database and writes its rows; use cases call these with their
session. One module per kind of row: runs.py (runs, look-ups, deletion), ingest.py (the bulk
insert of a batch), series.py, history.py (the history rule, history rows, evaluation state),
curations.py, traces.py, summaries.py, tokens.py, prcomments.py, jobs.py (the SQLite
queue's table), views.py (the dashboard pages' bounded reads), upkeep.py (planner statistics),
plans.py (the experiments' stored plans). The alerts' and the baselines' queries are in
their own folders (service/alerts/queries.py, service/baselines/queries.py)."""
