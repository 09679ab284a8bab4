"""Per-benchmark default branch, unread baseline_runs dropped, metric registry rows synced with
collectors/metrics.py.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

from collectors.metrics import seed_rows

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

_registry = sa.table('metric_registry', sa.column('name', sa.String), sa.column('unit', sa.String),
                     sa.column('direction', sa.String), sa.column('threshold_pct', sa.Float),
                     sa.column('exact', sa.Boolean), sa.column('gated', sa.Boolean),
                     sa.column('builtin', sa.Boolean))


def upgrade() -> None:
    with op.batch_alter_table('benchmarks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('default_branch', sa.String(length=200), nullable=True))
    op.drop_table('baseline_runs')
    # the builtin rows are the registry module's, whatever an older revision wrote
    rows = seed_rows()
    op.execute(_registry.delete().where(_registry.c.name.in_([r['name'] for r in rows])))
    op.bulk_insert(_registry, rows)


def downgrade() -> None:
    op.create_table('baseline_runs',
                    sa.Column('baseline_id', sa.Integer(), nullable=False),
                    sa.Column('run_id', sa.Integer(), nullable=False),
                    sa.ForeignKeyConstraint(['baseline_id'], ['baselines.id'], ondelete='CASCADE'),
                    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
                    sa.PrimaryKeyConstraint('baseline_id', 'run_id'))
    with op.batch_alter_table('benchmarks', schema=None) as batch_op:
        batch_op.drop_column('default_branch')
