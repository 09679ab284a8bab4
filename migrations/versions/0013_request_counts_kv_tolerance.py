"""The serve benchmarks' request counts in the metric registry: `failed_requests` (lower is
better, exact, gating) and `completed_requests` (evidence), as collectors/metrics.py defines them;
the KV-cache metrics' threshold set to the module's (exact within the allocator's granularity).

Revision ID: 0013
Revises: 0012
"""
import sqlalchemy as sa
from alembic import op

from collectors.metrics import seed_rows

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

NAMES = ("failed_requests", "completed_requests")
TOLERANT = ("kv_capacity_tokens", "kv_max_concurrency")
_registry = sa.table('metric_registry', sa.column('name', sa.String), sa.column('unit', sa.String),
                     sa.column('direction', sa.String), sa.column('threshold_pct', sa.Float),
                     sa.column('exact', sa.Boolean), sa.column('gated', sa.Boolean),
                     sa.column('builtin', sa.Boolean))


def upgrade() -> None:
    # a database made at 0002 from this module already holds them: the module's rows win
    op.execute(_registry.delete().where(_registry.c.name.in_(NAMES)))
    op.bulk_insert(_registry, [r for r in seed_rows() if r['name'] in NAMES])
    for r in seed_rows():
        if r['name'] in TOLERANT:
            op.execute(_registry.update().where(_registry.c.name == r['name'])
                       .values(threshold_pct=r['threshold_pct']))


def downgrade() -> None:
    op.execute(_registry.delete().where(_registry.c.name.in_(NAMES)))
    op.execute(_registry.update().where(_registry.c.name.in_(TOLERANT)).values(threshold_pct=0.0))
