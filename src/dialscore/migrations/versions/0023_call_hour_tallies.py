"""call hour tallies: a client's reported calls counted by line type, time zone, local day
and hour, what the best hours are learnt from (P194)

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "call_hour_tallies",
        sa.Column("client_id", sa.String(length=36), nullable=False),
        sa.Column("line_type", sa.String(length=32), nullable=False),
        sa.Column("time_zone", sa.String(length=64), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("hour", sa.Integer(), nullable=False),
        sa.Column("weekday", sa.Integer(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("connects", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("client_id", "line_type", "time_zone", "day", "hour"),
    )


def downgrade() -> None:
    op.drop_table("call_hour_tallies")
