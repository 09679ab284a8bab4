"""Use cases: one module per job. The only callers of repositories besides tests and the
concept folders' own logic (service/alerts/, service/baselines/); routes, the dashboard, the
bot and the CLI call these.

Judging: comparisons.py (THE place that matches series and picks metrics; unknown.py: what it
makes of runs whose identity is unknown), verdicts.py (the gate and compare answers), causes.py
(their traces' evidence and cause), experiments.py (interleaved A/B experiments), bisect.py
(`perfwarden bisect`), attribution.py (which config key explains a spread), explain.py
(attribution, traces and deterministic-mode runs joined into a decision). History: history.py
(per-run figures, change points, noise), noisecards.py (a series' noise card),
curations.py (expected change points and mutes, audited), summaries.py (stored attribution and
change points). Storing: ingest.py (a run record), uploads.py (staged traces committed with their
batch), traces.py (a trace attached and analyzed), sweep.py (pending traces picked up again),
runs.py (reading and deleting runs), tokens.py, jobs.py (the SQLite queue's units of
work). Pages: overview.py (the benchmark list), standing.py (each benchmark's stored verdicts
against its newest baseline), home.py (the home page's label verdict and decisions), pages.py (the
dashboard's view models), prcomments.py (the PR comment's bookkeeping)."""
