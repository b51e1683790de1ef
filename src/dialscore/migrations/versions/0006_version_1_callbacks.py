"""version 1 callbacks

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22 11:41:11.731083
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("callback_url", sa.String(length=2048), nullable=True))

    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("callback_secret_ciphertext", sa.Text(), nullable=True))

    # A version 1 callback is a delivery without a subscription, to the contact's URL.
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("kind", sa.String(length=16), server_default="webhook", nullable=False)
        )
        batch_op.add_column(sa.Column("target_url", sa.String(length=2048), nullable=True))
        batch_op.alter_column("subscription_id", existing_type=sa.VARCHAR(length=36), nullable=True)


def downgrade() -> None:
    deliveries = sa.table("webhook_deliveries", sa.column("id"), sa.column("kind"))
    attempts = sa.table("webhook_attempts", sa.column("delivery_id"))
    callbacks = sa.select(deliveries.c.id).where(deliveries.c.kind == "callback")
    op.execute(attempts.delete().where(attempts.c.delivery_id.in_(callbacks)))
    op.execute(deliveries.delete().where(deliveries.c.kind == "callback"))
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.alter_column(
            "subscription_id", existing_type=sa.VARCHAR(length=36), nullable=False
        )
        batch_op.drop_column("target_url")
        batch_op.drop_column("kind")

    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("callback_secret_ciphertext")

    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.drop_column("callback_url")
