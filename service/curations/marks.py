"""Curation by people, audited (who, when, why): an *expected* change point of a series' metric
moves its reference level to the change's first run (the gate's history spread starts there and
an open alert raised at that run is closed), a *mute* keeps a metric of a series from deciding
any verdict until it expires (it is still judged and shown). Neither is ever deleted: withdrawing
one stamps who and when."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

from ..alerts import queries as alerts_repo
from ..db import Session
from ..errors import Conflict, Invalid, NotFound
from ..format import series_label
from ..history import queries as hist_repo
from ..history import reads as history
from ..repositories import series as series_repo
from ..runs import queries as runs_repo
from ..stats.gate import Comparison
from . import queries as repo
from .schemas import MUTE_DAYS_MAX, CurationIn

LOCAL = "local"  # who, for an anonymous request from this machine


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _aware(t: datetime | None) -> datetime | None:
    return t if t is None or t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def create(session: Session, bench_name: str, body: CurationIn, who: str | None) -> dict[str, Any]:
    """A new curation of one metric of one series of `bench_name`."""
    bench = history.get_benchmark(session, bench_name)
    s = series_repo.series_rows(session, {body.series_id}).get(body.series_id)
    if s is None or s.benchmark_id != bench.id:
        raise NotFound(f"series {body.series_id} is not a series of {bench_name}", "series_id")
    if body.metric not in hist_repo.series_metrics(session, s.id):
        raise Invalid(f"no run of series {s.id} holds metric {body.metric!r}", "metric")
    now = _now()
    closed: list[int] = []
    if body.kind == "expected":
        assert body.run_id is not None
        run = repo.run_of(session, body.run_id)
        if run is None or run.series_id != s.id:
            raise NotFound(f"run {body.run_id} is not a run of series {s.id}", "run_id")
        for a in alerts_repo.of_series(session, s.id, body.metric):
            if a.run_id == body.run_id and a.state != "closed":
                alerts_repo.set_state(a, "closed")
                closed.append(a.id)
    else:
        assert body.expires_at is not None
        if not now < body.expires_at <= now + timedelta(days=MUTE_DAYS_MAX):
            raise Invalid(f"expires_at must lie within the next {MUTE_DAYS_MAX} days", "expires_at")
    row = repo.add(session, benchmark_id=bench.id, series_id=s.id, metric=body.metric,
                   kind=body.kind, run_id=body.run_id, note=body.note, expires_at=body.expires_at,
                   created_by=who or LOCAL, created_at=now)
    return {**_out(session, [row], {bench.id: bench.name})[0], "closed_alerts": closed}


def list_for(session: Session, bench_name: str, everything: bool) -> dict[str, Any]:
    """A benchmark's curations in force (`everything`: withdrawn and expired ones too), newest
    first."""
    bench = history.get_benchmark(session, bench_name)
    rows = repo.of_benchmark(session, bench.id, None if everything else _now())
    data = _out(session, rows, {bench.id: bench.name})
    return {"data": data, "count": len(data)}


def withdraw(session: Session, curation_id: int, who: str | None) -> dict[str, Any]:
    row = repo.get(session, curation_id)
    if row is None:
        raise NotFound(f"curation {curation_id} not found", "curation_id")
    if row.withdrawn_at is not None:
        raise Conflict(f"curation {curation_id} was withdrawn by {row.withdrawn_by} at "
                       f"{runs_repo.utc(row.withdrawn_at)}", "curation_id")
    repo.withdraw(session, row, who or LOCAL, _now())
    return _out(session, [row], None)[0]


def of_series(session: Session, series_ids: Iterable[int]) -> list[dict[str, Any]]:
    """The curations in force of these series, oldest first (answers that show them)."""
    return _out(session, repo.in_force(session, series_ids, _now()), None)


def muted(session: Session, items: Sequence[Comparison]) -> list[Comparison]:
    """The comparisons with the mutes in force set on those they cover."""
    mutes: dict[tuple[int | None, str], Any] = {(c.series_id, c.metric): c for c in
             repo.in_force(session, {i.series_id for i in items if i.series_id}, _now())
             if c.kind == "mute"}
    return [replace(i, muted=_mute_words(mutes[(i.series_id, i.metric)]))
            if (i.series_id, i.metric) in mutes else i for i in items]


def history_since(session: Session, pairs: Iterable[tuple[int, str]]
                  ) -> dict[tuple[int, str], datetime]:
    """(series, metric) -> when its reference level starts: the newest expected change in
    force."""
    wanted = set(pairs)
    rows = [c for c in repo.in_force(session, {s for s, _ in wanted}, _now())
            if c.kind == "expected" and (c.series_id, c.metric) in wanted and c.run_id]
    started = repo.run_started(session, [c.run_id for c in rows if c.run_id])
    out: dict[tuple[int, str], datetime] = {}
    for c in rows:
        t = _aware(started.get(c.run_id or 0))
        key = (c.series_id, c.metric)
        if t is not None and (key not in out or t > out[key]):
            out[key] = t
    return out


def _mute_words(c: Any) -> str:
    return f"until {runs_repo.utc(c.expires_at)} by {c.created_by}: {c.note}"


def line(c: dict[str, Any]) -> str:
    """One sentence a page or a comment shows."""
    who = f"{c['created_by']}, {c['created_at'][:10]}"
    if c["kind"] == "expected":
        at = f"run {c['run_id']}" + (f" (commit {c['commit'][:12]})" if c["commit"] else "")
        return f"{c['metric']} of {c['series']}: expected change at {at}, the reference " \
               f"level moves there ({who}): {c['note']}"
    return f"{c['metric']} of {c['series']}: muted until {c['expires_at']} ({who}): {c['note']}"


def _out(session: Session, rows: list[Any], names: dict[int, str] | None
         ) -> list[dict[str, Any]]:
    if not rows:
        return []
    series = series_repo.series_rows(session, {r.series_id for r in rows})
    names = names or alerts_repo.benchmark_names(session, {r.benchmark_id for r in rows})
    commits = hist_repo.commits_of(session, [r.run_id for r in rows if r.run_id])
    now = _now()
    out = []
    for r in rows:
        s = series.get(r.series_id)
        config = dict(s.config) if s else {}
        label = series_label({**config, "gpu": s.gpu, "gpu_count": s.gpu_count}) if s else \
            str(r.series_id)
        expires = _aware(r.expires_at)
        d = {"id": r.id, "benchmark": names.get(r.benchmark_id, ""), "series_id": r.series_id,
             "series": label, "config": config, "metric": r.metric, "kind": r.kind,
             "run_id": r.run_id, "commit": commits.get(r.run_id or -1), "note": r.note,
             "expires_at": runs_repo.utc(r.expires_at), "created_by": r.created_by,
             "created_at": runs_repo.utc(r.created_at) or "", "withdrawn_by": r.withdrawn_by,
             "withdrawn_at": runs_repo.utc(r.withdrawn_at),
             "in_force": r.withdrawn_at is None and (expires is None or expires > now)}
        out.append({**d, "line": line(d), "closed_alerts": []})
    return out
