"""Interleaved A/B experiments: their runs by arm and block, and the blocked verdict
(spec/api.md, "Experiments"; spec/api.md, One experiment one answer). The verdict is the gate's
for `{"experiment"}`
(comparisons.build pairs the blocks, at alpha / the looks stored with the runs), so the API, the
page, the PR comment and the CLI printout give one answer."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..db import Session
from ..format import series_short
from ..gate import verdicts
from ..gate.comparisons import ARMS, varied_keys
from ..gate.schemas import GateIn
from ..repositories import series as series_repo
from ..runs import queries as runs_repo


def show(session: Session, exp_id: str, alpha: float = 0.05) -> dict[str, Any]:
    """The experiment's runs by arm and block (with their run means, so drift is visible) and
    its verdict."""
    verdict = verdicts.gate(session, GateIn(experiment=exp_id), alpha)  # NotFound if none
    rows = runs_repo.experiment_runs(session, exp_id)
    means = runs_repo.run_means(session, [r.id for r in rows], "tok_s")
    series = series_repo.series_rows(session, {r.series_id for r in rows})
    varied = set(varied_keys([series[r.series_id].config for r in rows if r.experiment_arm == "baseline"],
                             [series[r.series_id].config for r in rows if r.experiment_arm == "candidate"]))

    def cell(sid: int) -> str:  # the run's cell without the keys the arms set apart
        s = series[sid]
        return series_short({k: v for k, v in s.config.items() if k not in varied}, s.gpu,
                            s.gpu_count)

    blocks: dict[int, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: {a: [] for a in ARMS})
    order: dict[int, list[str]] = defaultdict(list)
    for r in rows:
        arm = r.experiment_arm or "baseline"
        blocks[r.experiment_block or 0][arm].append(
            {"run_id": r.id, "series_id": r.series_id, "cell": cell(r.series_id),
             "started_at": runs_repo.utc(r.started_at), "tok_s_mean": means.get(r.id)})
        if arm not in order[r.experiment_block or 0]:
            order[r.experiment_block or 0].append(arm)
    return {"id": exp_id, "benchmark": verdict.benchmark, "runs": len(rows),
            "blocks": [{"block": b, "order": order[b], **blocks[b]} for b in sorted(blocks)],
            "verdict": verdict}
