"""ORM models. The schema changes only through Alembic (migrations/)."""
from .alerts import Alert
from .base import NAME, Base
from .baselines import Baseline, BaselineHistory
from .benchmarks import Benchmark, MetricDef, Series
from .bot import PrComment
from .jobs import Job
from .runs import Run, RunMetric, Sample
from .series_state import PendingEvaluation, SeriesState
from .summary import Summary
from .tokens import ApiToken
from .traces import TraceFile

__all__ = [
    'NAME', 'Base', 'Benchmark', 'Series', 'MetricDef', 'Run', 'Sample', 'RunMetric',
    'TraceFile', 'Baseline', 'BaselineHistory', 'ApiToken', 'PrComment', 'Alert', 'Job',
    'PendingEvaluation', 'SeriesState', 'Summary',
]
