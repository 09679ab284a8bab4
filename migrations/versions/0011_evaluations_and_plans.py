"""Full alert re-evaluations as durable jobs with their progress (`alert_evaluations`), and the
stored plan of each interleaved experiment (`experiment_plans`: the looks of its sequential
rule), filled for the experiments stored so far from the looks of each one's first run tagged with
any.

Revision ID: 0011
Revises: 0010
"""
import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'alert_evaluations',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('benchmark', sa.String(length=200), nullable=True),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('total_series', sa.Integer(), nullable=True),
        sa.Column('done_series', sa.Integer(), nullable=False),
        sa.Column('runs', sa.Integer(), nullable=False),
        sa.Column('last_series', sa.JSON(), nullable=True),
        sa.Column('new', sa.JSON(), nullable=False),
        sa.Column('error', sa.String(length=1000), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        'experiment_plans',
        sa.Column('experiment_id', sa.String(length=200), primary_key=True),
        sa.Column('looks', sa.Integer(), nullable=True),
        sa.Column('first_run_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False))
    # the plan of each stored experiment: the looks of its first run that was tagged with any
    # (a later run's larger tag is not the plan)
    op.execute("""
        INSERT INTO experiment_plans (experiment_id, looks, first_run_id, created_at)
        SELECT r.experiment_id,
               (SELECT m.experiment_looks FROM runs m
                WHERE m.experiment_id = r.experiment_id AND m.experiment_looks IS NOT NULL
                ORDER BY m.id LIMIT 1),
               r.id, r.created_at
        FROM runs r
        WHERE r.experiment_id IS NOT NULL
          AND r.id = (SELECT MIN(f.id) FROM runs f WHERE f.experiment_id = r.experiment_id)
    """)


def downgrade() -> None:
    op.drop_table('experiment_plans')
    op.drop_table('alert_evaluations')
