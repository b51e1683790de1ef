"""idempotency keys per operation: each stored answer names the operation its key was used
for, and a key is unique per user and operation (P76)

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 03:00:00.000000
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEYS = sa.table(
    "idempotency_keys",
    sa.column("id", sa.BigInteger()),
    sa.column("user_id", sa.String()),
    sa.column("key", sa.String()),
    sa.column("scope", sa.String()),
    sa.column("response", sa.JSON()),
)


def _scope_of(response: Any) -> str:
    """The operation a stored answer came from, by its shape: a scoring answer's credits are
    per phone, an enrichment's per contact, and a call report has no credits."""
    credits = response.get("credits") if isinstance(response, dict) else None
    if not isinstance(credits, dict):
        return "calls"
    return "contacts/enrich" if "costPerContact" in credits else "contacts/score"


def upgrade() -> None:
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scope", sa.String(length=32), nullable=True))
    connection = op.get_bind()
    for row_id, response in connection.execute(sa.select(KEYS.c.id, KEYS.c.response)).all():
        connection.execute(
            KEYS.update().where(KEYS.c.id == row_id).values(scope=_scope_of(response))
        )
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.alter_column("scope", existing_type=sa.String(length=32), nullable=False)
        batch_op.drop_constraint("uq_idempotency_user_key", type_="unique")
        batch_op.create_unique_constraint(
            "uq_idempotency_user_scope_key", ["user_id", "scope", "key"]
        )


def downgrade() -> None:
    # One answer per user and key, as before: the first one stored.
    first = sa.select(sa.func.min(KEYS.c.id)).group_by(KEYS.c.user_id, KEYS.c.key)
    op.execute(KEYS.delete().where(KEYS.c.id.not_in(first)))
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.drop_constraint("uq_idempotency_user_scope_key", type_="unique")
        batch_op.create_unique_constraint("uq_idempotency_user_key", ["user_id", "key"])
        batch_op.drop_column("scope")
