"""The verdict words, defined once (standard library only, so a GPU node's experiment judge and
the service say the same words): a metric's verdict, then a request's, and the line a verdict
carries while its evidence is pending."""
from __future__ import annotations

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
REGRESSION, IMPROVEMENT = "regression", "improvement"
METRIC_VERDICTS = (PASS, REGRESSION, IMPROVEMENT, INCONCLUSIVE)  # one comparison's
GATE_VERDICTS = (PASS, FAIL, INCONCLUSIVE)  # a request's: fail when any metric regressed


def pending_note(waiting: dict[int, int]) -> str | None:
    """The line a verdict carries while traces of its candidate runs are not analyzed yet (their
    evidence is not in its tables): {run id: traces pending}."""
    waiting = {rid: n for rid, n in waiting.items() if n}
    if not waiting:
        return None
    return (f"profiler evidence pending: {sum(waiting.values())} trace(s) of run(s) "
            f"{', '.join(map(str, sorted(waiting)))} not analyzed yet")
