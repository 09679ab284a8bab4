"""Durable jobs: trace analysis, alert evaluation and deliveries leave the request path.

- `traces.state` (pending, done, failed; NULL for rows stored before: analyzed during their
  upload, so done), `traces.error` (why analysis failed) and `traces.set_size` (the rank count
  the upload named: the run's summary waits for that many analyzed files).
- PostgreSQL: procrastinate's schema (its own tables, types and functions, from the installed
  procrastinate package), the queue `perfwarden worker` runs.
- SQLite (embedded default): the `jobs` table the in-process worker reads.

Revision ID: 0007
Revises: 0006
"""
import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

# procrastinate's objects, dropped on downgrade (what its schema.sql creates)
PROCRASTINATE_DROP = """
DROP TABLE IF EXISTS procrastinate_events, procrastinate_periodic_defers, procrastinate_jobs,
    procrastinate_workers CASCADE;
DROP FUNCTION IF EXISTS {functions} CASCADE;
DROP TYPE IF EXISTS procrastinate_job_status, procrastinate_job_event_type,
    procrastinate_job_to_defer_v1 CASCADE;
"""


def upgrade() -> None:
    with op.batch_alter_table('traces') as batch:
        batch.add_column(sa.Column('state', sa.String(length=16), nullable=True))
        batch.add_column(sa.Column('error', sa.String(length=1000), nullable=True))
        batch.add_column(sa.Column('set_size', sa.Integer(), nullable=True))
    bind = op.get_bind()
    if bind.dialect.name == 'postgresql':
        from procrastinate.schema import SchemaManager

        # through the DB-API cursor without parameters: psycopg sends it as it is (the SQL
        # holds literal % signs), inside Alembic's transaction
        dbapi = bind.connection.dbapi_connection
        assert dbapi is not None
        dbapi.cursor().execute(SchemaManager.get_schema())
        return
    op.create_table(
        'jobs',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=64), nullable=False),
        sa.Column('args', sa.JSON(), nullable=False),
        sa.Column('coalesce_key', sa.String(length=300), nullable=True),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('max_attempts', sa.Integer(), nullable=False),
        sa.Column('run_after', sa.DateTime(timezone=True), nullable=False),
        sa.Column('locked_until', sa.DateTime(timezone=True), nullable=True),
        sa.Column('worker', sa.String(length=100), nullable=True),
        sa.Column('last_error', sa.String(length=1000), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_jobs_due', 'jobs', ['state', 'run_after'], unique=False)
    # one waiting job per coalescing key: a burst of ingests of a benchmark is one evaluation
    op.create_index('uq_jobs_todo_key', 'jobs', ['coalesce_key'], unique=True,
                    sqlite_where=sa.text("state = 'todo' AND coalesce_key IS NOT NULL"))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == 'postgresql':
        names = [r[0] for r in bind.exec_driver_sql(
            "SELECT p.oid::regprocedure::text FROM pg_proc p "
            "WHERE p.proname LIKE 'procrastinate%%'")]
        bind.exec_driver_sql(PROCRASTINATE_DROP.format(functions=", ".join(names) or
                                                       "procrastinate_none()"))
    else:
        op.drop_index('uq_jobs_todo_key', table_name='jobs')
        op.drop_index('ix_jobs_due', table_name='jobs')
        op.drop_table('jobs')
    with op.batch_alter_table('traces') as batch:
        batch.drop_column('set_size')
        batch.drop_column('error')
        batch.drop_column('state')
