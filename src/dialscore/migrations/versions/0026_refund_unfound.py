"""refund unfound: whether a plan gives back the charge of the enrichment contacts no new
number was found for, and what each job gave back (P202)

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-09 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Every plan refunds, as the model's default says: a plan that should not is set so.
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("refund_unfound", sa.Boolean(), nullable=False, server_default=sa.true())
        )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("credits_refunded", sa.BigInteger(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("credits_refunded")
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_column("refund_unfound")
