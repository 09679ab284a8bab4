"""Measurements that back the figures in docs/results.md, each a script with its own command
line: trace_speed.py and trace_identity.py (trace analysis speed, and results unchanged against
a commit), gate_power.py and experiment_sequential.py (error rates of the gate and of the
sequential rule), gate_noise.py and alert_noise.py (the gate's history rules and the alerts on
real noise with outliers and bimodal clocks), trace_evidence_power.py (how often the traces'
evidence names a slowed kernel), service_load.py (ingest and gate under a large history),
service_reads.py (the heaviest reads and the gate beside them at 10^5 and 10^6 runs),
dashboard_speed.py and dashboard_pages.py (page times), page_load.py (pages as a first-time
visitor's browser loads them, against a commit), cpu_preset.py (the CPU preset's spread
and what the gate makes of it), busy_cores.py (a sandboxed parse's time at the lowest CPU
priority and at the caller's, beside busy cores), settle.py (a settled server process against an
unsettled one: a Holm correction and GET /api/v1/explain); gpu/ holds the H200 batch scripts, wrk/ the
load generator's script."""
