"""dnc imports: each do-not-call file imported into a list, with its kind, its date and when
it was applied, so that a list's age is known (P180-P187)

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-06 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "dnc_imports",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("list_name", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("file_name", sa.String(length=500), nullable=False),
        sa.Column("file_date", sa.Date(), nullable=False),
        sa.Column("file_date_source", sa.String(length=16), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("numbers", sa.BigInteger(), nullable=False),
        sa.Column("added", sa.BigInteger(), nullable=False),
        sa.Column("removed", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("dnc_imports", schema=None) as batch_op:
        batch_op.create_index(
            "ix_dnc_imports_list_applied", ["list_name", "applied_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("dnc_imports", schema=None) as batch_op:
        batch_op.drop_index("ix_dnc_imports_list_applied")
    op.drop_table("dnc_imports")
