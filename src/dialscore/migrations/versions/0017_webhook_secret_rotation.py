"""webhook secret rotation: the previous secret of a subscription, sealed, and when it was
replaced

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("previous_secret_ciphertext", sa.Text(), nullable=True))
        batch_op.add_column(
            sa.Column("secret_rotated_at", sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.drop_column("secret_rotated_at")
        batch_op.drop_column("previous_secret_ciphertext")
