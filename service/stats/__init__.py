"""The statistics, pure (numbers in, dataclasses out; no database, no HTTP): assess.py (one metric of
one series, baseline against candidate), gate.py (the decision over many comparisons), blocked.py
(an interleaved experiment block by block), history.py (change points and noise), noisecard.py (a
series' noise card: spread, clock modes, A/A false alarms, detectable change), robust.py (a
series' history as a yardstick: levels, outliers, pooled spread), attribution.py (which config key
explains a spread), effects.py (which level of a key carries its effect, which pairs of keys
interact), traces.py (the traces' evidence across runs: kernels and lane figures run by run), levels.py
(the printed confidence level)."""
