"""outbox messages set aside after failing too often: their last error and when they were
set aside; the relay's index leaves them out

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NOT_SET_ASIDE = sa.text("failed_at IS NULL")


def upgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_error", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("failed_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.drop_index("ix_outbox_available")
    op.create_index(
        "ix_outbox_due",
        "outbox",
        ["available_at"],
        sqlite_where=NOT_SET_ASIDE,
        postgresql_where=NOT_SET_ASIDE,
    )


def downgrade() -> None:
    # Work set aside goes back to the queue: before this revision nothing was ever set aside.
    outbox = sa.table("outbox", sa.column("failed_at"), sa.column("attempts"))
    op.execute(outbox.update().where(outbox.c.failed_at.is_not(None)).values(attempts=0))
    op.drop_index("ix_outbox_due", table_name="outbox")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_column("failed_at")
        batch_op.drop_column("last_error")
        batch_op.create_index("ix_outbox_available", ["available_at"], unique=False)
