"""Tests of the pure statistics (service/stats/): assess, gate, blocked, history, attribution."""
