"""contact intake: a job's accepted contacts kept as submitted until their rows are written
(P218)

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-29 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "contact_intake",
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("first_ordinal", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("contacts", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"]),
        sa.PrimaryKeyConstraint("job_id", "first_ordinal"),
    )


def downgrade() -> None:
    # Its contacts exist nowhere else: refused until a worker has written their rows.
    waiting = op.get_bind().scalar(sa.text("SELECT count(*) FROM contact_intake"))
    if waiting:
        raise RuntimeError(
            f"{waiting} groups of accepted contacts are not written as contact rows yet: "
            "run a worker until its jobs are done, then downgrade"
        )
    op.drop_table("contact_intake")
