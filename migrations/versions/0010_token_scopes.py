"""Scoped tokens: an `ingest` token names the benchmarks it may post runs and traces for
(`benchmarks`, a JSON list; NULL for every other scope); `admin` tokens hold the admin-only
writes (baselines, run deletion, benchmark settings, alert evaluation).

Revision ID: 0010
Revises: 0009
"""
import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('api_tokens') as t:
        t.add_column(sa.Column('benchmarks', sa.JSON(), nullable=True))


def downgrade() -> None:
    # a token the old code cannot read (ingest, admin) must not come back with more rights
    # or none: ingest tokens become read tokens, admin tokens write tokens
    op.execute("UPDATE api_tokens SET scope = 'read' WHERE scope = 'ingest'")
    op.execute("UPDATE api_tokens SET scope = 'write' WHERE scope = 'admin'")
    with op.batch_alter_table('api_tokens') as t:
        t.drop_column('benchmarks')
