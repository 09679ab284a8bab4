"""The perfwarden service: it stores run records and judges them against baselines.

Subpackages: api/ (the REST API: deps.py, guard.py, routes/), usecases/ (one module per job, the
only callers of repositories), repositories/ (the queries and the row writes), models/ (ORM),
schemas/ (the API's pydantic types), stats/ (pure statistics), traces/ (trace files: storage,
upload intake, analysis runner), jobs/ (the durable queue and its worker), bot/ (PR comment, check
run, job summary), cli/ (`perfwarden`). Modules: main.py (create_app, where domain errors become
HTTP), config.py (settings), db.py (engine and sessions), migrate.py (Alembic from code),
errors.py (domain errors), format.py (the number rule and the series label), evidence.py (the
profiler evidence beside a verdict), gate_view.py (the gate's answer as its readers see it, one
view for every format), gate_report.py (the CLI's plain-text tables), sandbox.py (the process a
trace analysis runs in), readcache.py (what heavy reads computed, kept per revision of the runs),
serving.py (uvicorn against slow clients), outbound.py (outbound HTTP with a total deadline per
attempt), github.py (GitHub's REST API through it, with retries: the PR bot's and the alerts'
issues), seed.py (committed records into a database), version.py (the one version)."""
