"""API bodies (pydantic) no one concept owns: benchmarks.py (the benchmark list and its patch),
health.py, common.py (shared field types, the one error body, query-string parsers). Every
other body lives in its concept's folder as schemas.py (service/runs/, service/gate/, ...)."""
from .benchmarks import BenchmarkList, BenchmarkPatch, BenchmarkSummary
from .common import (
    FIXED_SERIES_KEYS,
    METRIC_NAME,
    NAME_MAX,
    ConfigValue,
    ErrorBody,
    ErrorOut,
    Name,
    OptName,
    RunId,
    Sample,
    finite_number,
    parse_run_ids,
    parse_thresholds,
    parse_vary,
)
from .health import HealthOut

__all__ = [
    'NAME_MAX', 'FIXED_SERIES_KEYS', 'Name', 'OptName', 'METRIC_NAME', 'ConfigValue',
    'finite_number', 'Sample', 'RunId', 'ErrorBody', 'ErrorOut', 'parse_run_ids', 'parse_vary',
    'parse_thresholds', 'HealthOut', 'BenchmarkSummary', 'BenchmarkList', 'BenchmarkPatch',
]
