"""key monthly limits: an API key's monthly credit limit and what it spent this month, and
the key of each ledger row (P201)

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-08 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("monthly_credit_limit", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("spent_month", sa.String(length=7), nullable=True))
        batch_op.add_column(
            sa.Column("spent_this_month", sa.BigInteger(), nullable=False, server_default="0")
        )
    with op.batch_alter_table("credit_ledger", schema=None) as batch_op:
        batch_op.add_column(sa.Column("key_id", sa.String(length=36), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("credit_ledger", schema=None) as batch_op:
        batch_op.drop_column("key_id")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_column("spent_this_month")
        batch_op.drop_column("spent_month")
        batch_op.drop_column("monthly_credit_limit")
