"""Trace groups: the files of one run are one or more traces (the ranks of one capture each);
`trace_group` 0 (NULL) is the run's own, others carry their phase and, once complete, the set's
summary (`group_summary`).

Revision ID: 0012
Revises: 0011
"""
import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('traces') as t:
        t.add_column(sa.Column('trace_group', sa.Integer(), nullable=True))
        t.add_column(sa.Column('phase', sa.String(16), nullable=True))
        t.add_column(sa.Column('group_summary', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('traces') as t:
        t.drop_column('group_summary')
        t.drop_column('phase')
        t.drop_column('trace_group')
