"""`perfwarden experiment`'s local judge: the records in a SQLite file beside them, judged by the
same use case the API runs, and the verdict printed as `perfwarden gate` prints it."""
from __future__ import annotations

from pathlib import Path

from collectors.experiment import BASELINE, Judge, Outcome, block_order, complete

from ...config import Settings
from ...db import make_engine, session_factory, transaction
from ...gate.report import print_gate
from ...gate.schemas import GateIn, GateOut
from ...gate.verdicts import gate
from ...migrate import upgrade
from ...runs.ingest import store_runs
from ...runs.schemas import RunIn
from ..common import EXIT_INCONCLUSIVE, EXIT_PASS, EXIT_REGRESSION


class LocalJudge(Judge):
    """The experiment's verdict without a server: its records in `workdir`/experiment.db,
    judged at the server's alpha and the looks stored with the runs."""

    where = "locally"

    def __init__(self, workdir: Path, body: dict):
        super().__init__(body)
        workdir.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{workdir / 'experiment.db'}"
        upgrade(url)
        self.sessions = session_factory(make_engine(url))

    def flush(self, records: list[dict]) -> None:
        _, recs = complete(records)  # a stored run is not stored twice (its idempotency key)
        store_runs(self.sessions, [RunIn.model_validate(r) for r in recs])

    def verdict(self) -> dict:
        with transaction(self.sessions) as session:
            out = gate(session, GateIn.model_validate(self.body), Settings().gate_alpha)
        return out.model_dump(mode="json")


def show(outcome: Outcome) -> int:
    """The blocks' order, then the verdict table of `perfwarden gate`."""
    assert outcome.result is not None  # the full install always has a judge
    order = " ".join("".join("A" if a == BASELINE else "B" for a in block_order(b))
                     for b in sorted(outcome.blocks))
    print(f"experiment {outcome.exp_id}: {len(outcome.blocks)} block(s), order {order} "
          "(A baseline, B candidate)")
    result = GateOut.model_validate(outcome.result)
    print_gate(result)
    return {"pass": EXIT_PASS, "fail": EXIT_REGRESSION}.get(result.verdict, EXIT_INCONCLUSIVE)
