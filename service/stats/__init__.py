"""The statistics, pure (numbers in, dataclasses out; no database, no HTTP): assess.py (one
metric of one series, baseline against candidate), gate.py (the decision over many
comparisons), blocked.py (an interleaved experiment block by block), history.py (change points
and noise), attribution.py (which config key explains a spread)."""
