"""webhook auto-disable: since when every attempt to a subscription has failed, and when and
why it was turned off for that (P160)

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("failing_since", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("disabled_reason", sa.String(length=500), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.drop_column("disabled_reason")
        batch_op.drop_column("disabled_at")
        batch_op.drop_column("failing_since")
