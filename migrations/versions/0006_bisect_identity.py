"""Bisect runs and engine identity: the `bisect {id, commit}` tag of a run (runs posted during
`perfwarden bisect`, kept out of every history) and a benchmark's `bisect_command`.

Revision ID: 0006
Revises: 0005
"""
import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('bisect_id', sa.String(length=200), nullable=True))
        batch.create_index('ix_runs_bisect_id', ['bisect_id'], unique=False)
    with op.batch_alter_table('benchmarks') as batch:
        batch.add_column(sa.Column('bisect_command', sa.String(length=4096), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('benchmarks') as batch:
        batch.drop_column('bisect_command')
    with op.batch_alter_table('runs') as batch:
        batch.drop_index('ix_runs_bisect_id')
        batch.drop_column('bisect_id')
