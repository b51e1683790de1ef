"""webhook subscription rate: deliveries per second to one subscription, below its user's
rate; null for none

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-04 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rate_limit", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.drop_column("rate_limit")
