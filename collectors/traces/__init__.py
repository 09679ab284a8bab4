"""Trace loaders (nsys SQLite, Kineto JSON) -> one op model -> step/stream/gap analysis.

Loading: load.py (a file opened by its content, a rank set in parallel), gz.py (gzip inflated under
caps), nsys.py and nsys_schema.py (Nsight Systems exports, opened as untrusted), kineto.py,
kineto_events.py, kineto_scan.py, kineto_split.py and kineto_times.py (the Kineto JSON: the decoded
shapes, the scan into columns, a large document scanned in pieces, exact times; _kfilter.c, the C
pass that writes the needed fields as columns), model.py (the one in-memory model, all columns),
columns.py (a loaded trace kept on disk as columns). Analysis: pipeline.py (THE trace pipeline,
files to summary), steps.py (which host ranges are the steps), analysis.py (step projection, gaps,
overlap), options.py (what an analysis is asked, the steps it projects onto), roles.py (stream
roles, decided once per trace set), names.py (kernel keys across producers), lanes.py (the auxiliary
lanes per step and device), intervals.py (vectorized interval arithmetic), hostops.py (host
operators of a trace without device work), ordering.py, presets.py and verdict.py (the ordering
check, its guard presets, its verdict), representative.py (whether a profile shows what the trials
ran), summary.py (the trace summary type), diff.py (what got slower or faster between two analyses),
progress.py (progress lines on stderr)."""
from .analysis import Options, analyze, timeline
from .load import load_trace
from .model import Trace, TraceError
from .pipeline import analyze_files

__all__ = ["Options", "Trace", "TraceError", "analyze", "analyze_files", "load_trace", "timeline"]
