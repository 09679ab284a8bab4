"""Stored summaries: what a benchmark's runs add up to, computed when runs arrive by
the durable job (service/jobs: the alert evaluation of a burst of ingests, or a `summarize` job a
page queues), and read by the dashboard's pages, which never refit.

- attribution (attribution/fit.compute: the ANOVA fits) of `tok_s` and `determinism` over
  every run of the benchmark, and over each label with at least 3 runs (the labels of the runs
  that arrived since the last refresh, at most LABELS_PER_JOB of them; labels a page asks for;
  and every stored label whose runs changed);
- change points (history/reads.changepoints) of each metric's default-branch history;
- the standing (usecases/standing): each series' newest run judged against the newest baseline;
- the explain report (explain/report) of the non-identical repeats, for the same labels as
  the attribution: the matrix page's and the PR comment's decision sentence.

Each row stores the runs it covers (count and newest id). A page compares that with the runs
now: a current summary is shown as it is; a stale one is shown as what it is (the runs it
covers) while a refresh is queued; a missing one is said to be computing."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..attribution import fit as attribution
from ..db import Session
from ..errors import Invalid
from ..explain import report as explain
from ..history import reads as history
from ..history.reads import BenchmarkRow
from ..repositories import summaries as repo
from ..runs import queries as runs_repo
from . import standing

if TYPE_CHECKING:
    from ..models import Summary

log = logging.getLogger("perfwarden.summaries")
ATTRIBUTION, EXPLAIN = "attribution", "explain"
CHANGES = history.CHANGES
EXPLAINED = "determinism"  # the matrix's question: which key makes repeats differ
ATTRIBUTED = ("determinism", "tok_s")  # in the order the matrix page says them
LABELS_PER_JOB = 20
MIN_RUNS = 3  # what attribution needs (attribution/fit.compute)
# queue a refresh of the benchmark's summaries (and of these labels'); the page never waits
Recompute = Callable[[str, list[str]], None]  # (benchmark, labels)


Put = tuple[str, str, str, "repo.Coverage", dict[str, Any]]  # kind, metric, label, covers, body


@dataclass(frozen=True)
class Computed:
    """A refresh's summaries, computed from one snapshot, not stored yet."""

    bench_id: int
    at: datetime
    puts: list[Put]


def compute(session: Session, bench_name: str, labels: Sequence[str] = (),
            alpha: float = 0.05) -> Computed:
    """The benchmark's summaries, read and fitted with no write: the job fits them first and
    stores them in a short transaction after (store), so ingest never waits behind the fits
    (SQLite has one write lock; a refresh that held it across its fits stalled every ingest)."""
    bench = history.get_benchmark(session, bench_name)
    prev = repo.get(session, bench.id, ATTRIBUTION, "tok_s")
    covers = repo.coverage(session, bench.id)
    now = datetime.now(timezone.utc)
    puts: list[Put] = [(ATTRIBUTION, m, "", covers, _attribution_body(session, bench, m, ""))
                       for m in ATTRIBUTED]
    puts.append((EXPLAIN, EXPLAINED, "", covers, _explain_body(session, bench, "")))
    for metric in repo.metrics_of(session, bench.id):
        cps = history.changepoints(session, bench.name, metric)
        puts.append((CHANGES, metric, "", covers, cps.model_dump(mode="json")))
    stand = standing.for_job(session, bench, alpha, covers)
    if stand is not None:
        puts.append((standing.VERDICTS, standing.METRIC, "", covers, stand))
    todo = _labels_to_refresh(session, bench.id, labels, prev.last_run_id if prev else 0)
    for label, label_covers in sorted(todo.items()):
        puts += [(ATTRIBUTION, m, label, label_covers, _attribution_body(session, bench, m, label))
                 for m in ATTRIBUTED]
        puts.append((EXPLAIN, EXPLAINED, label, label_covers, _explain_body(session, bench, label)))
    return Computed(bench.id, now, puts)


def store(session: Session, done: Computed) -> int:
    """Store a computed refresh; a summary a later refresh stored meanwhile is kept. Returns
    how many were stored."""
    return sum(repo.put(session, done.bench_id, kind, metric, label, covers, body, done.at)
               for kind, metric, label, covers, body in done.puts)


def refresh(session: Session, bench_name: str, labels: Sequence[str] = ()) -> int:
    """Compute and store the benchmark's summaries in one transaction (seeding, tests)."""
    return store(session, compute(session, bench_name, labels))


def refresh_all(session: Session) -> int:
    """Every benchmark's summaries (seeding, where no job ran)."""
    return sum(refresh(session, b.name) for b, n, _ in runs_repo.benchmark_overview(session) if n)


def _attribution_body(session: Session, bench: BenchmarkRow, metric: str, label: str
                      ) -> dict[str, Any]:
    try:
        out = attribution.compute(session, bench.id, bench.name, metric,
                                  [label] if label else None, None)
    except Invalid as e:  # too few runs, no digests: stored as the answer for these runs
        return {"error": e.message, "field": e.field}
    except ValueError as e:  # statsmodels refuses this design (e.g. "asymptotically non-normal")
        log.warning("attribution of %s/%s (label %r) not fitted: %s", bench.name, metric, label, e)
        return {"error": f"attribution could not be fitted: {e}", "field": "benchmark"}
    return out.model_dump(mode="json")


def _explain_body(session: Session, bench: BenchmarkRow, label: str) -> dict[str, Any]:
    try:
        out = explain.explain(session, bench.name, EXPLAINED, [label] if label else None,
                              largest_group=True)
    except Invalid as e:  # too few runs, no digests, several GPUs: the answer for these runs
        return {"error": e.message, "field": e.field}
    except ValueError as e:  # statsmodels refuses this design
        log.warning("explain of %s (label %r) not fitted: %s", bench.name, label, e)
        return {"error": f"explain could not be fitted: {e}", "field": "benchmark"}
    return out.model_dump(mode="json")


def stored_explain(session: Session, name: str, label: str | None) -> dict[str, Any] | None:
    """The stored explain report of the benchmark's runs (or one label's), as computed when
    they arrived; None where there is none or it could not be made. Never fitted here."""
    bench = history.get_benchmark(session, name)
    row = repo.get(session, bench.id, EXPLAIN, EXPLAINED, label or "")
    if row is None or "error" in row.body:
        return None
    return {**row.body, "current": _current(row, repo.coverage(session, bench.id, label or ""))}


def _labels_to_refresh(session: Session, bench_id: int, asked: Sequence[str], after: int
                       ) -> dict[str, repo.Coverage]:
    """Labels whose attribution to (re)compute, with the runs each covers: the asked ones and
    those of runs newer than `after` (with at least MIN_RUNS runs), and stored ones whose runs
    changed."""
    stored = {s.label: (s.runs, s.last_run_id) for s in repo.of_kind(session, bench_id, ATTRIBUTION)
              if s.label and s.metric == "tok_s"}
    new = set(asked) | set(repo.labels_after(session, bench_id, after, LABELS_PER_JOB))
    cov = repo.label_coverage(session, bench_id, sorted(new | set(stored)))
    out = {label: cov[label] for label in new if label in cov and cov[label][0] >= MIN_RUNS}
    out.update({label: cov.get(label, (0, 0)) for label, had in stored.items()
                if cov.get(label, (0, 0)) != had})
    return out


# --- what pages read ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Findings:
    """The matrix page's attribution sentences and what they cover ("" when current)."""

    lines: list[str] = field(default_factory=list)
    note: str = ""


def explained_by_trace(session: Session, trace_id: int) -> str | None:
    """The benchmark whose stored explain report a trace just analyzed may change (its run's
    benchmark has a matrix report: the report's trace diff reads the runs' trace summaries,
    which the runs' count and newest id do not cover); None where there is none."""
    return repo.matrix_of_trace(session, trace_id, EXPLAIN)


def _current(row: Summary | None, now: repo.Coverage) -> bool:
    return row is not None and (row.runs, row.last_run_id) == now


def _stale_note(what: str, row: Summary, now: repo.Coverage) -> str:
    return (f"{what} as of {row.runs:,} run{'s' if row.runs != 1 else ''} (computed "
            f"{row.computed_at:%Y-%m-%d %H:%M} UTC); the runs have changed since ({now[0]:,} "
            "now) and a refresh is queued")


def matrix_findings(session: Session, name: str, label: str | None,
                    recompute: Recompute) -> Findings:
    """Stored attribution of the benchmark's runs (or one label's); never fitted here."""
    bench = history.get_benchmark(session, name)
    key = label or ""
    now = repo.coverage(session, bench.id, key)
    if now[0] < MIN_RUNS:
        return Findings()  # too few runs to attribute anything: nothing to say
    rows = [repo.get(session, bench.id, ATTRIBUTION, m, key) for m in ATTRIBUTED]
    if not all(_current(r, now) for r in rows):
        recompute(name, [key] if key else [])
    lines: list[str] = []
    for r in rows:
        if r is not None and "error" not in r.body:
            lines += [x for x in (r.body.get("finding"), r.body.get("spread_finding")) if x]
    first = rows[-1]
    if first is None:
        return Findings(lines, "attribution of these runs is being computed (a job queued when "
                               "they arrived); reload in a moment")
    if not _current(first, now):
        return Findings(lines, _stale_note("attribution", first, now))
    return Findings(lines, "")


@dataclass(frozen=True)
class StoredChanges:
    """Change points of each series' default-branch history, by series id, as stored."""

    branch: str
    by_series: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    series: dict[int, dict[str, Any]] = field(default_factory=dict)  # config, gpu, gpu_count
    note: str = ""  # "" when current


def stored_changes(session: Session, bench: BenchmarkRow, metric: str, recompute: Recompute
                   ) -> StoredChanges:
    branch = history.default_branch(bench)
    row = repo.get(session, bench.id, CHANGES, metric)
    now = repo.coverage(session, bench.id)
    usable = row is not None and row.body.get("branch") == branch
    if not (usable and _current(row, now)):
        recompute(bench.name, [])
    if row is None or not usable:
        return StoredChanges(branch, note=f"change points of {metric} are being computed (a job "
                                          "queued when runs arrive); reload in a moment")
    series = {int(s["series_id"]): {k: s[k] for k in ("config", "gpu", "gpu_count")}
              for s in row.body["series"]}
    by = {int(s["series_id"]): list(s["change_points"]) for s in row.body["series"]
          if s["change_points"]}
    return StoredChanges(branch, by, series,
                         "" if _current(row, now) else _stale_note("change points", row, now))
