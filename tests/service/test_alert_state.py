"""The stored evaluation state: evaluating batch by batch from the state gives the
change points and alerts of a full recompute over the whole history, on a history whose noise
is the H200's own (the trial samples of the 15 repeated runs in data/h200/noise/graphs)."""
from __future__ import annotations

import random
import time
from datetime import datetime, timedelta, timezone

from sqlalchemy import text

from tests.conftest import h200_records

STEPS = {0: [(150, -4.0)], 1: [(90, 3.5), (260, -8.0)], 2: []}  # series -> (run, step %)


def _history(bench: str, runs: int = 360) -> list[dict]:
    """Three series of `runs` runs each, in time order; each run's samples are a real H200 run's
    tok/s samples scaled to the series' level at that point (planted steps in STEPS)."""
    real = [r["metrics"]["tok_s"]["samples"] for r in h200_records("noise", "graphs")]
    center = sum(sum(s) / len(s) for s in real) / len(real)
    rng = random.Random(24)
    t0 = datetime(2026, 6, 1, tzinfo=timezone.utc)
    out = []
    for i in range(runs):
        for s, steps in STEPS.items():
            level = 1000.0 * (s + 1)
            for at, pct in steps:
                if i >= at:
                    level *= 1 + pct / 100
            samples = rng.choice(real)
            out.append({"benchmark": bench, "config": {"tp": 1, "batch_size": s + 1},
                        "hardware": {"gpu": "NVIDIA H200", "gpu_count": 1},
                        "commit": f"{i:07d}{s}", "branch": "main",
                        "started_at": (t0 + timedelta(hours=i, seconds=s)).isoformat(),
                        "metrics": {"tok_s": {"unit": "tok/s", "samples": [
                            level * v / center for v in samples]}}})
    return out


def _alerts(sessions, bench: str) -> list[tuple]:
    from service.alerts import lifecycle
    from service.db import transaction

    with transaction(sessions) as s:
        found = lifecycle.list_alerts(s, bench, None)["alerts"]
    return sorted((a["config"]["batch_size"], a["commit"], a["good_commit"], round(a["delta_pct"], 6),
                   round(a["before"], 6)) for a in found)


def test_incremental_state_gives_the_full_recomputes_alerts(settings):
    from service.alerts import lifecycle
    from service.db import make_engine, session_factory, transaction
    from service.runs import ingest
    from service.runs.schemas import RunIn

    engine = make_engine(settings.database_url)
    sessions = session_factory(engine)
    try:
        inc = [RunIn.model_validate(r) for r in _history("inc")]
        full = [RunIn.model_validate(r) for r in _history("full")]
        for k in range(0, len(inc), 30):  # as CI posts them, each batch evaluated after it:
            ingest.store_runs(sessions, inc[k:k + 30])
            ingest.store_runs(sessions, full[k:k + 30])
            with transaction(sessions) as s:
                lifecycle.evaluate_benchmark(s, "inc")  # from the stored state (the job)
                lifecycle.evaluate(s, "full")  # the full recompute over the whole history
        got, want = _alerts(sessions, "inc"), _alerts(sessions, "full")
        assert want == got
        # the planted steps, each once, naming the first bad run
        assert [(b, c[:7]) for b, c, *_ in want] == [(1, "0000150"), (2, "0000260")], want
        # (series 2: +3.5% is an improvement, no alert; -8% later is -4.8% from the reference)
        with transaction(sessions) as s:  # a re-evaluation of either adds nothing
            assert lifecycle.evaluate_benchmark(s, "inc") == ([], 0, False)
            assert lifecycle.evaluate(s, "full") == []
    finally:
        engine.dispose()


def test_a_backlog_is_evaluated_in_passes_with_the_full_recomputes_alerts(settings, monkeypatch):
    """1,080 runs stored before any evaluation (a worker far behind), taken off the inbox 250 at
    a time by the job, one transaction per pass: the full recompute's alerts, every run
    evaluated, each series rebuilt once (the first pass's rebuild judged the later passes' runs
    too: they leave the inbox with it), and a job with nothing left does nothing."""
    from service.alerts import evaluation, lifecycle
    from service.db import make_engine, session_factory, transaction
    from service.history.reads import get_benchmark
    from service.jobs import tasks
    from service.runs import ingest
    from service.runs.schemas import RunIn

    monkeypatch.setattr(evaluation, "PENDING_PER_PASS", 250)
    engine = make_engine(settings.database_url)
    sessions = session_factory(engine)
    passes = []
    real = lifecycle.evaluate_benchmark

    def counted(session, name):
        out = real(session, name)
        passes.append(out.more)
        return out

    monkeypatch.setattr(lifecycle, "evaluate_benchmark", counted)
    rebuilt = []
    real_rebuild = evaluation.rebuild

    def rebuild(session, bench, metric, series_id):
        rebuilt.append((bench.name, series_id, metric))
        return real_rebuild(session, bench, metric, series_id)

    monkeypatch.setattr(evaluation, "rebuild", rebuild)
    try:
        inc = [RunIn.model_validate(r) for r in _history("inc")]
        full = [RunIn.model_validate(r) for r in _history("full")]
        for k in range(0, len(inc), 100):
            ingest.store_runs(sessions, inc[k:k + 100])
            ingest.store_runs(sessions, full[k:k + 100])
        queued = []
        ctx = tasks.Context(settings, sessions, type("Q", (), {
            "enqueue": lambda self, *a, **k: queued.append(a[0]) or True})())
        tasks.KINDS["evaluate_alerts"].run(ctx, {"benchmark": "inc"})
        assert passes == [True, False]  # 250 runs, then the rest of their 3 series with them
        assert len(rebuilt) == len(set(rebuilt)) == 3, rebuilt  # once per series, not per pass
        with transaction(sessions) as s:
            assert evaluation.evaluate_new(s, get_benchmark(s, "inc")).runs == 0
        with transaction(sessions) as s:
            lifecycle.evaluate(s, "full")
        assert _alerts(sessions, "inc") == _alerts(sessions, "full") != []
        assert "summarize" in queued
        tasks.KINDS["evaluate_alerts"].run(ctx, {"benchmark": "inc"})
        assert passes[-1] is False and len(passes) == 3
        assert queued.count("summarize") == 1  # the one with nothing to do queued no refresh
    finally:
        engine.dispose()


def test_the_evaluation_keeps_the_planners_statistics_where_autovacuum_does_not(settings):
    """On PostgreSQL with autovacuum off for the runs tables (this machine's server has it off
    altogether), the evaluation job analyzes what ingest grew, by autovacuum's own threshold,
    so its lookups are planned for the rows there are; on SQLite it does nothing."""
    from service.db import make_engine, session_factory
    from service.jobs import tasks
    from service.repositories import upkeep
    from service.runs import ingest
    from service.runs.schemas import RunIn

    engine = make_engine(settings.database_url)
    sessions = session_factory(engine)
    pg = engine.dialect.name == "postgresql"
    stat = text("SELECT n_mod_since_analyze, last_analyze IS NOT NULL, c.reltuples "
                "FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
                "WHERE s.relname = 'runs'")
    try:
        if pg:
            with engine.begin() as con:
                for t in ("runs", "run_metrics"):
                    con.execute(text(f"ALTER TABLE {t} SET (autovacuum_enabled = false)"))
        ingest.store_runs(sessions, [RunIn.model_validate(r) for r in _history("stats", 120)])
        if not pg:
            assert upkeep.analyze_stale(sessions) == []
            return
        with engine.connect() as con:  # the ingest's counts reach the statistics view
            deadline = time.monotonic() + 30
            while con.execute(stat).one()[0] < 360 and time.monotonic() < deadline:
                time.sleep(0.2)
                con.rollback()
            assert con.execute(stat).one()[:2] == (360, False)
        ctx = tasks.Context(settings, sessions, type("Q", (), {
            "enqueue": lambda self, *a, **k: True})())
        tasks.KINDS["evaluate_alerts"].run(ctx, {"benchmark": "stats"})
        with engine.connect() as con:
            mod, analyzed, rows = con.execute(stat).one()
        assert analyzed and mod == 0 and rows == 360
    finally:
        engine.dispose()
