"""Alerts: one per change point of a default-branch series in the worse direction.

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'alerts',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('benchmark_id', sa.Integer(), nullable=False),
        sa.Column('series_id', sa.Integer(), nullable=False),
        sa.Column('metric', sa.String(length=200), nullable=False),
        sa.Column('branch', sa.String(length=200), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('good_run_id', sa.Integer(), nullable=True),
        sa.Column('commit', sa.String(length=200), nullable=True),
        sa.Column('good_commit', sa.String(length=200), nullable=True),
        sa.Column('before', sa.Float(), nullable=False),
        sa.Column('after', sa.Float(), nullable=False),
        sa.Column('delta_pct', sa.Float(), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('webhook_delivered_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('webhook_attempts', sa.Integer(), nullable=False),
        sa.Column('github_issue', sa.Integer(), nullable=True),
        sa.Column('notify_error', sa.String(length=1000), nullable=True),
        sa.ForeignKeyConstraint(['benchmark_id'], ['benchmarks.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['series_id'], ['series.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('series_id', 'metric', 'run_id', name='uq_alert_change'),
    )
    op.create_index('ix_alerts_benchmark_state', 'alerts', ['benchmark_id', 'state'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_alerts_benchmark_state', table_name='alerts')
    op.drop_table('alerts')
