"""Trace loaders (nsys SQLite, Kineto JSON) -> one op model -> step/stream/gap analysis."""
from .analysis import Options, analyze, timeline
from .load import load_trace
from .model import Trace, TraceError
from .pipeline import analyze_files

__all__ = ["Options", "Trace", "TraceError", "analyze", "analyze_files", "load_trace", "timeline"]
