"""indexes for the score report: a user's scored contacts in time order, a client's calls
since a time

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01 09:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.create_index("ix_contacts_user_scored", ["user_id", "scored_at"])
    with op.batch_alter_table("call_outcomes", schema=None) as batch_op:
        batch_op.create_index("ix_call_outcomes_client_called", ["client_id", "called_at"])


def downgrade() -> None:
    with op.batch_alter_table("call_outcomes", schema=None) as batch_op:
        batch_op.drop_index("ix_call_outcomes_client_called")
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.drop_index("ix_contacts_user_scored")
