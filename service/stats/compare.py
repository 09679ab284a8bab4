"""Compare page data: the gate's answer plus what a reviewer wants beside it (shared by the
dashboard's compare page and the PR comment bot)."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from collectors.traces.diff import diff_summaries

from ..models import Run, TraceFile
from ..repositories.runs import samples_of, utc
from ..schemas import GateIn
from .gate import run_gate


def _run_brief(r: Run) -> dict:
    return {"id": r.id, "commit": r.commit, "branch": r.branch, "label": r.label,
            "started_at": utc(r.started_at), "hardware": r.hardware, "config": r.config,
            "determinism": r.determinism}


def compare(session: Session, req: GateIn, alpha: float = 0.05) -> dict:
    gate = run_gate(session, req, alpha)
    ids = gate["baseline_run_ids"] + gate["candidate_run_ids"]
    runs = {r.id: r for r in session.scalars(select(Run).where(Run.id.in_(ids)))}
    names = sorted({m["name"] for m in gate["metrics"]})
    samples = samples_of(session, ids, names)
    dist = []
    for m in gate["metrics"]:
        sid = m["series_id"]
        side_ids = {"baseline": [i for i in gate["baseline_run_ids"] if runs[i].series_id == sid],
                    "candidate": [i for i in gate["candidate_run_ids"] if runs[i].series_id == sid]}
        dist.append({"metric": m["name"], "series": m["series"],
                     **{k: [{"run_id": i, "samples": samples.get(i, {}).get(m["name"], [])}
                            for i in v] for k, v in side_ids.items()}})
    traces = {}
    for t in session.scalars(select(TraceFile).where(TraceFile.run_id.in_(ids))
                             .order_by(TraceFile.id)):
        traces.setdefault(t.run_id, []).append({"id": t.id, "filename": t.filename,
                                                "sha256": t.sha256})

    def first_summary(side: list[int]):
        for i in side:
            if runs[i].trace_summary and runs[i].trace_summary.get("steps"):
                return i, runs[i].trace_summary
        return None, None

    bid, bsum = first_summary(gate["baseline_run_ids"])
    cid, csum = first_summary(gate["candidate_run_ids"])
    trace_diff = None
    if bsum and csum:
        trace_diff = diff_summaries(bsum, csum)
        trace_diff["base_run_id"], trace_diff["candidate_run_id"] = bid, cid
    return {**gate, "distributions": dist, "trace_diff": trace_diff, "traces": traces,
            "baseline_runs": [_run_brief(runs[i]) for i in gate["baseline_run_ids"]],
            "candidate_runs": [_run_brief(runs[i]) for i in gate["candidate_run_ids"]]}
