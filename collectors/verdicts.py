"""The verdict words, defined once (standard library only, so a GPU node's experiment judge and
the service say the same words): a metric's verdict, then a request's."""
from __future__ import annotations

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
REGRESSION, IMPROVEMENT = "regression", "improvement"
METRIC_VERDICTS = (PASS, REGRESSION, IMPROVEMENT, INCONCLUSIVE)  # one comparison's
GATE_VERDICTS = (PASS, FAIL, INCONCLUSIVE)  # a request's: fail when any metric regressed
