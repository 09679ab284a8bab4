"""Why, not only what: routes.py (/api/v1/explain), schemas.py (its body), report.py (over a
factorial matrix, the attribution, the traces' kernel diff and the deterministic-mode runs
joined into one decision), causes.py (the traces' evidence of a gate answer across its runs,
and one cause for a verdict that did not pass)."""
