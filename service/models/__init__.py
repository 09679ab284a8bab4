"""ORM models, one module per resource; the package imports them all. The schema changes only through
Alembic (migrations/). base.py (the declarative base), benchmarks.py (benchmarks, series, the metric
registry rows), runs.py (runs, samples, per-metric figures), traces.py (trace files),
series_state.py (the evaluation state per series and the runs waiting for evaluation),
summary.py (stored summaries), tokens.py, bot.py (PR comments), jobs.py (the SQLite queue's table),
curations.py (expected change points and mutes, audited), experiments.py (the experiments' stored
plans). The alerts' and the baselines' tables are in their own folders
(service/alerts/tables.py, service/baselines/tables.py)."""
from .base import NAME, Base
from .benchmarks import Benchmark, BenchmarkCount, MetricDef, Series
from .bot import PrComment
from .curations import Curation
from .experiments import ExperimentPlan
from .jobs import Job
from .runs import Run, RunMetric, Sample
from .series_state import PendingEvaluation, SeriesState
from .summary import Summary
from .tokens import ApiToken
from .traces import TraceFile

__all__ = [
    'NAME', 'Base', 'Benchmark', 'BenchmarkCount', 'Series', 'MetricDef', 'Run', 'Sample', 'RunMetric',
    'TraceFile', 'ApiToken', 'PrComment', 'Job',
    'PendingEvaluation', 'SeriesState', 'Summary', 'ExperimentPlan',
    'Curation',
]
