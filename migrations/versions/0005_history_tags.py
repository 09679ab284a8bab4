"""History tags: the looks an experiment was planned with (spec/api.md, One experiment one
answer), the bisect tag that keeps a run out of history (History one rule; bisect), and the
trace-derived metrics as evidence in the registry table (Gating and evidence metrics).

Revision ID: 0005
Revises: 0004
"""
import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

EVIDENCE = ('aux_gap_mean_us', 'aux_gap_median_us', 'aux_gap_p95_us', 'aux_idle_per_step_us')


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch_op:
        batch_op.add_column(sa.Column('experiment_looks', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('bisect', sa.JSON(none_as_null=True), nullable=True))
    registry = sa.table('metric_registry', sa.column('name', sa.String), sa.column('gated', sa.Boolean))
    op.execute(registry.update().where(registry.c.name.in_(EVIDENCE)).values(gated=False))


def downgrade() -> None:
    registry = sa.table('metric_registry', sa.column('name', sa.String), sa.column('gated', sa.Boolean))
    op.execute(registry.update().where(registry.c.name.in_(EVIDENCE)).values(gated=True))
    with op.batch_alter_table('runs') as batch_op:
        batch_op.drop_column('bisect')
        batch_op.drop_column('experiment_looks')
