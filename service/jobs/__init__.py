"""Durable jobs: trace analysis of uploads, alert evaluation after ingest, and
the deliveries (webhook, GitHub issue, PR comment) leave the request path and run from a queue
kept in the database, retried with backoff and resumed after a crash.

- PostgreSQL: procrastinate (`pg.py`), run by `perfwarden worker`; its schema comes in through
  this project's Alembic migration 0007.
- SQLite (embedded default): the `jobs` table (`table.py`), run by a thread that
  `perfwarden serve` starts (or by `perfwarden worker` as well).

Callers use `open_queue(settings, sessions)` (`queue.py`) and `Queue.enqueue(kind, args,
coalesce=...)`; the job kinds and what each does are in `tasks.py`; `worker.py` runs them,
`sweep.py` queues again at start what a crash left, `pause.py` is the tests' pause point;
`tables.py` is the SQLite queue's table, `queries.py` its reads and writes, `units.py` its
units of work (enqueue, claim, renew, finish, retry).

The package imports nothing itself: the migrations read `tables.py` without the queue, its
tasks and every library they bring.
"""
