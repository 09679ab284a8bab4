"""Curation: expected change points and muted metrics of a series, with who, when and why, and
who withdrew them.

Revision ID: 0014
Revises: 0013
"""
import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'curations',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('benchmark_id', sa.Integer(),
                  sa.ForeignKey('benchmarks.id', ondelete='CASCADE'), nullable=False),
        sa.Column('series_id', sa.Integer(), sa.ForeignKey('series.id', ondelete='CASCADE'),
                  nullable=False),
        sa.Column('metric', sa.String(length=200), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=True),
        sa.Column('note', sa.String(length=1000), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('created_by', sa.String(length=200), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('withdrawn_by', sa.String(length=200), nullable=True),
        sa.Column('withdrawn_at', sa.DateTime(timezone=True), nullable=True))
    op.create_index('ix_curations_benchmark_id', 'curations', ['benchmark_id'])
    op.create_index('ix_curations_series_metric', 'curations', ['series_id', 'metric'])


def downgrade() -> None:
    op.drop_index('ix_curations_series_metric', table_name='curations')
    op.drop_index('ix_curations_benchmark_id', table_name='curations')
    op.drop_table('curations')
