"""rows of an uploaded file that its job left out, kept with the job, and the column mapping
the job was started with

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 06:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("upload_mapping", sa.JSON(), nullable=True))
    op.create_table(
        "job_rejected_rows",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("job_id", sa.String(length=36), sa.ForeignKey("jobs.id"), nullable=False),
        sa.Column("row_index", sa.Integer(), nullable=False),
        sa.Column("cells", sa.JSON(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
    )
    op.create_index(
        "ix_job_rejected_rows_job_row", "job_rejected_rows", ["job_id", "row_index"], unique=True
    )


def downgrade() -> None:
    op.drop_index("ix_job_rejected_rows_job_row", table_name="job_rejected_rows")
    op.drop_table("job_rejected_rows")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("upload_mapping")
