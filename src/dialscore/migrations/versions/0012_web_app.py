"""the web app: passwords and deactivation for users, labels and last use for API keys,
sessions, failed sign-ins, password links, and the uploaded file's columns for jobs

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 20:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("password_hash", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("deactivated_at", WHEN, nullable=True))
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("label", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("last_used_at", WHEN, nullable=True))
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("upload_columns", sa.JSON(), nullable=True))
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source_row", sa.JSON(), nullable=True))
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column("token_hash", sa.String(length=64), nullable=False, unique=True),
        sa.Column("user_id", sa.String(length=36), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("last_seen_at", WHEN, nullable=False),
        sa.Column("expires_at", WHEN, nullable=False),
        sa.Column("revoked_at", WHEN, nullable=True),
    )
    op.create_index("ix_web_sessions_user_id", "web_sessions", ["user_id"])
    op.create_table(
        "sign_in_failures",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("key", sa.String(length=400), nullable=False),
        sa.Column("failed_at", WHEN, nullable=False),
    )
    op.create_index("ix_sign_in_failures_key", "sign_in_failures", ["key", "failed_at"])
    op.create_table(
        "password_links",
        sa.Column("id", sa.String(length=36), primary_key=True),
        sa.Column("token_hash", sa.String(length=64), nullable=False, unique=True),
        sa.Column("user_id", sa.String(length=36), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("expires_at", WHEN, nullable=False),
        sa.Column("used_at", WHEN, nullable=True),
    )
    op.create_index("ix_password_links_user_id", "password_links", ["user_id"])


def downgrade() -> None:
    op.drop_table("password_links")
    op.drop_table("sign_in_failures")
    op.drop_table("web_sessions")
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.drop_column("source_row")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("upload_columns")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_column("last_used_at")
        batch_op.drop_column("label")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("deactivated_at")
        batch_op.drop_column("password_hash")
