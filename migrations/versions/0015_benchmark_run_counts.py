"""Each benchmark's run count, newest run id and newest run time, kept in `benchmark_counts` by
triggers on `runs` (every insert and delete, whatever path made it), so the revision every
cached read is keyed by, and the home page's order, cost a few rows per benchmark instead of a
count over its runs (a million runs: about 0.5 s per read before).

PostgreSQL: statement-level triggers over the statement's transition table; each connection
adds to a shard of its own (backend pid modulo 16), so concurrent ingests of one benchmark never
wait for each other's commit; benchmarks in id order, so no two statements deadlock. A delete
subtracts, then clamps every shard's newest id and time to what remains. SQLite (one writer at
a time): row-level triggers on shard 0.

Revision ID: 0015
Revises: 0014
"""
import sqlalchemy as sa
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None

SHARDS = 16

_PG = (
    f"""
    CREATE FUNCTION pw_runs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO benchmark_counts AS c (benchmark_id, shard, runs, top, latest)
        SELECT benchmark_id, pg_backend_pid() % {SHARDS}, count(*), max(id), max(started_at)
          FROM pw_new GROUP BY benchmark_id ORDER BY benchmark_id
        ON CONFLICT (benchmark_id, shard) DO UPDATE SET runs = c.runs + EXCLUDED.runs,
               top = GREATEST(c.top, EXCLUDED.top), latest = GREATEST(c.latest, EXCLUDED.latest);
        RETURN NULL;
    END $$
    """,
    f"""
    CREATE FUNCTION pw_runs_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        d record;
        t integer;
        l timestamptz;
    BEGIN
        -- a benchmark deleted with its runs (the cascade) keeps no counts
        INSERT INTO benchmark_counts AS c (benchmark_id, shard, runs)
        SELECT o.benchmark_id, pg_backend_pid() % {SHARDS}, -count(*) FROM pw_old o
         WHERE EXISTS (SELECT 1 FROM benchmarks b WHERE b.id = o.benchmark_id)
         GROUP BY o.benchmark_id ORDER BY o.benchmark_id
        ON CONFLICT (benchmark_id, shard) DO UPDATE SET runs = c.runs + EXCLUDED.runs;
        FOR d IN SELECT benchmark_id, max(id) AS gone, max(started_at) AS gone_at FROM pw_old
                  GROUP BY benchmark_id ORDER BY benchmark_id LOOP
            IF d.gone >= (SELECT max(k.top) FROM benchmark_counts k
                           WHERE k.benchmark_id = d.benchmark_id)
               OR d.gone_at >= (SELECT max(k.latest) FROM benchmark_counts k
                                 WHERE k.benchmark_id = d.benchmark_id) THEN
                SELECT max(r.id), max(r.started_at) INTO t, l FROM runs r
                 WHERE r.benchmark_id = d.benchmark_id;
                UPDATE benchmark_counts
                   SET top = CASE WHEN t IS NULL THEN NULL ELSE LEAST(top, t) END,
                       latest = CASE WHEN l IS NULL THEN NULL ELSE LEAST(latest, l) END
                 WHERE benchmark_id = d.benchmark_id;
            END IF;
        END LOOP;
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER pw_runs_inserted AFTER INSERT ON runs REFERENCING NEW TABLE AS pw_new "
    "FOR EACH STATEMENT EXECUTE FUNCTION pw_runs_inserted()",
    "CREATE TRIGGER pw_runs_deleted AFTER DELETE ON runs REFERENCING OLD TABLE AS pw_old "
    "FOR EACH STATEMENT EXECUTE FUNCTION pw_runs_deleted()",
)

_SQLITE = (
    """
    CREATE TRIGGER pw_runs_inserted AFTER INSERT ON runs BEGIN
        INSERT INTO benchmark_counts (benchmark_id, shard, runs, top, latest)
        VALUES (NEW.benchmark_id, 0, 1, NEW.id, NEW.started_at)
        ON CONFLICT (benchmark_id, shard) DO UPDATE SET runs = runs + 1,
               top = CASE WHEN top IS NULL OR excluded.top > top THEN excluded.top ELSE top END,
               latest = CASE WHEN latest IS NULL OR excluded.latest > latest
                             THEN excluded.latest ELSE latest END;
    END
    """,
    """
    CREATE TRIGGER pw_runs_deleted AFTER DELETE ON runs BEGIN
        UPDATE benchmark_counts SET runs = runs - 1,
               top = CASE WHEN top <= OLD.id THEN
                   (SELECT max(id) FROM runs WHERE benchmark_id = OLD.benchmark_id) ELSE top END,
               latest = CASE WHEN latest <= OLD.started_at THEN
                   (SELECT max(started_at) FROM runs WHERE benchmark_id = OLD.benchmark_id)
                   ELSE latest END
         WHERE benchmark_id = OLD.benchmark_id AND shard = 0;
    END
    """,
)


def upgrade() -> None:
    op.create_table(
        'benchmark_counts',
        sa.Column('benchmark_id', sa.Integer(),
                  sa.ForeignKey('benchmarks.id', ondelete='CASCADE'), primary_key=True),
        sa.Column('shard', sa.Integer(), primary_key=True),
        sa.Column('runs', sa.Integer(), nullable=False),
        sa.Column('top', sa.Integer(), nullable=True),
        sa.Column('latest', sa.DateTime(timezone=True), nullable=True))
    op.execute("INSERT INTO benchmark_counts (benchmark_id, shard, runs, top, latest) "
               "SELECT benchmark_id, 0, count(*), max(id), max(started_at) FROM runs "
               "GROUP BY benchmark_id")
    for statement in _PG if op.get_bind().dialect.name == 'postgresql' else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    pg = op.get_bind().dialect.name == 'postgresql'
    for name in ('pw_runs_inserted', 'pw_runs_deleted'):
        op.execute(f"DROP TRIGGER IF EXISTS {name}" + (" ON runs" if pg else ""))
        if pg:
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")
    op.drop_table('benchmark_counts')
