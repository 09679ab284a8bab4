"""Tests of collectors/: the trace loaders and pipeline on real traces, the engines' outputs,
the commands, the profile pass and the metric registry; reference.py is a plain, independent
reading of spec/metrics.md (loops over the files' raw rows) the analysis is checked against."""
