"""uploaded contact lists in the database, so that any instance serves the next step

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-29 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "uploads",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column("user_id", sa.String(length=36), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("client_id", sa.String(length=36), sa.ForeignKey("clients.id"), nullable=False),
        sa.Column("filename", sa.String(length=200), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("file", sa.LargeBinary(), nullable=True),
        sa.Column("meta", sa.JSON(), nullable=False),
        sa.Column("rejected_csv", sa.Text(), nullable=True),
        sa.Column("summaries", sa.JSON(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.CheckConstraint("state IN ('waiting', 'starting', 'started')", name="ck_uploads_state"),
    )
    op.create_index("ix_uploads_user_id", "uploads", ["user_id"])
    op.create_index("ix_uploads_updated_at", "uploads", ["updated_at"])


def downgrade() -> None:
    op.drop_index("ix_uploads_updated_at", table_name="uploads")
    op.drop_index("ix_uploads_user_id", table_name="uploads")
    op.drop_table("uploads")
