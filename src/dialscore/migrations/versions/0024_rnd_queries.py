"""rnd queries: each question put to the FCC Reassigned Numbers Database for a client's
contact and its answer, the record of the safe harbor (P195)

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-08 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rnd_queries",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("client_id", sa.String(length=36), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=True),
        sa.Column("contact_id", sa.String(length=36), nullable=True),
        sa.Column("number", sa.String(length=20), nullable=False),
        sa.Column("consent_date", sa.Date(), nullable=False),
        sa.Column("asked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("answer", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("rnd_queries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_rnd_queries_client_asked", ["client_id", "asked_at"], unique=False
        )
        batch_op.create_index(
            "ix_rnd_queries_client_number", ["client_id", "number", "asked_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("rnd_queries", schema=None) as batch_op:
        batch_op.drop_index("ix_rnd_queries_client_number")
        batch_op.drop_index("ix_rnd_queries_client_asked")
    op.drop_table("rnd_queries")
