"""A stored alert-evaluation state per series: the evaluation after an ingest reads
the new runs and this state, not the series' whole history.

- `series_states`: per series and metric, the runs since the reference segment began and the
  reference level (service/alerts/evaluation.py).
- `pending_evaluations`: runs stored and not yet evaluated (written by the ingest's transaction,
  taken by the evaluation's).
- `ix_runs_benchmark_body`: "a record posted twice counts once" without a scan.

Revision ID: 0008
Revises: 0007
"""
import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'series_states',
        sa.Column('series_id', sa.Integer(), sa.ForeignKey('series.id', ondelete='CASCADE'),
                  primary_key=True),
        sa.Column('metric', sa.String(length=200), primary_key=True),
        sa.Column('branch', sa.String(length=200), nullable=False),
        sa.Column('reference', sa.Float(), nullable=True),
        sa.Column('start_run', sa.Integer(), nullable=False),
        sa.Column('runs', sa.Integer(), nullable=False),
        sa.Column('window', sa.JSON(), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False))
    op.create_table(
        'pending_evaluations',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), primary_key=True),
        sa.Column('benchmark_id', sa.Integer(),
                  sa.ForeignKey('benchmarks.id', ondelete='CASCADE'), nullable=False),
        sa.Column('run_id', sa.Integer(), sa.ForeignKey('runs.id', ondelete='CASCADE'),
                  nullable=False))
    op.create_index('ix_pending_evaluations_benchmark_id', 'pending_evaluations',
                    ['benchmark_id'])
    op.create_index('ix_runs_benchmark_body', 'runs', ['benchmark_id', 'body_sha256'])


def downgrade() -> None:
    op.drop_index('ix_runs_benchmark_body', 'runs')
    op.drop_index('ix_pending_evaluations_benchmark_id', 'pending_evaluations')
    op.drop_table('pending_evaluations')
    op.drop_table('series_states')
