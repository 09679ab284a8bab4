"""Trace loaders (nsys SQLite, Kineto JSON) -> one op model -> step/stream/gap analysis."""
from .analysis import Options, analyze, timeline
from .load import analyze_files, load_trace
from .model import Trace, TraceError

__all__ = ["Options", "Trace", "TraceError", "analyze", "analyze_files", "load_trace", "timeline"]
