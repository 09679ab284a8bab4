"""Stored summaries: attribution and change points computed when runs arrive, read by
the dashboard's pages. Each row names the runs it covers (count and newest id).

Revision ID: 0009
Revises: 0008
"""
import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'summaries',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('benchmark_id', sa.Integer(),
                  sa.ForeignKey('benchmarks.id', ondelete='CASCADE'), nullable=False),
        sa.Column('kind', sa.String(length=32), nullable=False),
        sa.Column('metric', sa.String(length=200), nullable=False),
        sa.Column('label', sa.String(length=200), nullable=False),
        sa.Column('runs', sa.Integer(), nullable=False),
        sa.Column('last_run_id', sa.Integer(), nullable=False),
        sa.Column('computed_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('body', sa.JSON(), nullable=False),
        sa.UniqueConstraint('benchmark_id', 'kind', 'metric', 'label',
                            name='uq_summary_identity'),
    )


def downgrade() -> None:
    op.drop_table('summaries')
