"""The gate and the compare view, in one place: routes.py (/api/v1/gate, /api/v1/compare),
schemas.py (their bodies), comparisons.py (THE place that matches series and picks metrics,
for every asker), verdicts.py (the comparisons judged once by service/stats/gate.py, and the
answer made), view.py (the answer as a reader sees it, for every output format), report.py
(the plain-text tables of `perfwarden gate` and `perfwarden noise`), evidence.py (the profiler
evidence beside each verdict), noisecards.py (a series' noise card: in the compare answer, the
PR comment and /api/v1/noise)."""
