"""Experiment tags as columns: the runs of an interleaved A/B experiment, by arm and block.

Revision ID: 0003
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('experiment_id', sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column('experiment_arm', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('experiment_block', sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f('ix_runs_experiment_id'), ['experiment_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_runs_experiment_id'))
        batch_op.drop_column('experiment_block')
        batch_op.drop_column('experiment_arm')
        batch_op.drop_column('experiment_id')
