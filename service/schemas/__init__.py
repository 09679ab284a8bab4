"""API input and output schemas (pydantic), one module per resource, separate from the ORM models and
the analysis data: runs.py, traces.py, benchmarks.py, gate.py (the gate and compare),
experiments.py, attribution.py, history.py, explain.py, curations.py, health.py (the alerts' and the
baselines' in their own folders); common.py (shared
field types, the one error body, query-string parsers)."""
from .attribution import AttributionOut, FactorOut
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
from .curations import CurationIn, CurationList, CurationOut
from .experiments import ExperimentBlock, ExperimentOut, ExperimentRun
from .explain import DeterministicOut, ExplainOut, KernelChange, TraceDiffOut
from .gate import (
    Cause,
    CompareOut,
    Distribution,
    FigureChange,
    GateIn,
    GateOut,
    MetricVerdict,
    RunBrief,
    RunSamples,
    SideStats,
    TraceBrief,
    TraceEvidence,
)
from .health import HealthOut
from .history import (
    ChangePointOut,
    ChangePointsOut,
    NoiseCardOut,
    NoiseOut,
    NoiseRow,
    SeriesChangePoints,
)
from .runs import (
    RUN_EXTRAS,
    BisectTag,
    ExperimentTag,
    MetricIn,
    MetricOut,
    RunBatchCreated,
    RunBatchIn,
    RunCreated,
    RunDeleted,
    RunIn,
    RunList,
    RunOut,
    StagedTraceRef,
    TraceRef,
    TraceState,
)
from .traces import StagedTraceOut, TimelineOut, TraceOut

__all__ = [
    'CurationIn', 'CurationList', 'CurationOut',
    'NAME_MAX', 'FIXED_SERIES_KEYS', 'Name', 'OptName', 'METRIC_NAME', 'ConfigValue',
    'finite_number', 'Sample', 'RunId', 'ErrorBody', 'ErrorOut', 'parse_run_ids', 'parse_vary',
    'parse_thresholds', 'MetricIn', 'ExperimentTag', 'BisectTag', 'RUN_EXTRAS', 'RunIn',
    'RunCreated', 'RunBatchIn', 'StagedTraceRef', 'StagedTraceOut', 'RunBatchCreated', 'MetricOut',
    'TraceState', 'TraceRef', 'RunDeleted', 'TimelineOut', 'HealthOut',
    'RunOut', 'RunList', 'GateIn',
    'SideStats', 'MetricVerdict', 'GateOut', 'RunBrief', 'RunSamples', 'Distribution',
    'TraceBrief', 'CompareOut', 'Cause', 'FigureChange', 'TraceEvidence',
    'ChangePointOut', 'SeriesChangePoints', 'ChangePointsOut',
    'NoiseRow', 'NoiseOut', 'NoiseCardOut', 'BenchmarkSummary', 'BenchmarkList', 'BenchmarkPatch',
    'ExperimentRun', 'ExperimentBlock', 'ExperimentOut', 'FactorOut', 'AttributionOut',
    'DeterministicOut', 'ExplainOut', 'KernelChange', 'TraceDiffOut',
    'TraceOut',
]
