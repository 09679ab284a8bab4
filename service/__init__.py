"""The perfwarden service: it stores run records and judges them against baselines.

One folder per concept, each holding what it has of routes.py, schemas.py, tables.py, queries.py
and its logic: runs/ (records, batches, the run filters and the history rule, ingest), traces/
(trace files: storage, upload intake, staged uploads, the analysis runner, attaching), gate/ (THE
matching of series, the verdicts, the one view of an answer, its text table, its evidence, noise
cards), baselines/ (named baselines), history/ (a series' figures, change points), alerts/,
curations/ (expected change points and mutes), experiments/ (interleaved A/B experiments, bisect),
attribution/ (which config key explains a spread), explain/ (the decision over a factorial matrix,
the traces' causes), github/ (the PR bot), jobs/ (the durable queue, its worker and units of work).
Shared below them: stats/ (pure statistics), models/ and schemas/ (the tables and bodies no one
concept owns), repositories/ (their queries), usecases/ (the pages' and the index's reads that join
concepts: overview, standing, home, pages, summaries, tokens, runs: the run page), api/ (deps.py,
guard.py, hosts.py, lanes.py, routes/ of the benchmark list and health), cli/ (`perfwarden`).
Modules: main.py (create_app, where domain errors become HTTP), site.py (what the app asks of
the pages served beside it, found by entry point: the dashboard), config.py (settings), db.py (engine
and sessions), migrate.py (Alembic from code), errors.py (domain errors), format.py (the number
rule and the series label), sandbox.py (the process a trace analysis runs in), readcache.py (what
heavy reads computed, kept per revision of the runs), serving.py (uvicorn against slow clients),
outbound.py (outbound HTTP with a total deadline per attempt), github_rest.py (GitHub's REST API
through it: the PR bot's comments and checks, the alerts' issues), seed.py (committed records into
a database), version.py (the one version)."""
