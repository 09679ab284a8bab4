"""Attribution: which config key explains a metric's run means, trial spread or non-identical
repeats. routes.py (/api/v1/attribution), schemas.py (its body), fit.py (the runs of one
branch's history fitted by service/stats/attribution.py)."""
