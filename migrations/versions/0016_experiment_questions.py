"""The question an interleaved experiment's runner asked (`experiment_plans.question`: its
metrics, thresholds and vary), kept with its plan so every later asker that names none judges
the same metrics at the same thresholds. Experiments stored before keep none: they are judged
as before, on the request's metrics or the gating ones.

Revision ID: 0016
Revises: 0015
"""
import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('experiment_plans') as batch:
        batch.add_column(sa.Column('question', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('experiment_plans') as batch:
        batch.drop_column('question')
