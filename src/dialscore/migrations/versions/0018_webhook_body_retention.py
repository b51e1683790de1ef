"""webhook delivery bodies that do not outlive their use: a delivery's body may be removed
(past its retention, or with its job), when and why; an index of the finished deliveries that
still have one

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-03 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BODY_KEPT_WHEN_FINISHED = sa.text("body_removed_at IS NULL AND completed_at IS NOT NULL")


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.alter_column("payload", existing_type=sa.JSON(), nullable=True)
        batch_op.add_column(sa.Column("body_removed_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("body_removed_reason", sa.String(length=16), nullable=True))
    op.create_index(
        "ix_webhook_deliveries_body_kept",
        "webhook_deliveries",
        ["completed_at"],
        sqlite_where=BODY_KEPT_WHEN_FINISHED,
        postgresql_where=BODY_KEPT_WHEN_FINISHED,
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_body_kept", table_name="webhook_deliveries")
    # A body removed does not come back: such a delivery keeps an empty payload (the column
    # holds one again), and sending it again would send that.
    op.execute("UPDATE webhook_deliveries SET payload = '{}' WHERE payload IS NULL")
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_column("body_removed_reason")
        batch_op.drop_column("body_removed_at")
        batch_op.alter_column("payload", existing_type=sa.JSON(), nullable=False)
