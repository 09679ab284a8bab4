"""The ORM models no one concept owns; the schema changes only through Alembic (migrations/).
base.py (the declarative base), benchmarks.py (benchmarks, series, the metric registry rows),
summary.py (stored summaries), tokens.py (API tokens). Every other table lives in its concept's
folder as tables.py (service/runs/, service/traces/, service/history/, service/alerts/, ...);
migrations/env.py imports them all."""
from .base import NAME, Base
from .benchmarks import Benchmark, BenchmarkCount, MetricDef, Series
from .summary import Summary
from .tokens import ApiToken

__all__ = ['NAME', 'Base', 'Benchmark', 'BenchmarkCount', 'Series', 'MetricDef', 'Summary', 'ApiToken']
