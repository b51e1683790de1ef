"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22 05:24:03.916216
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The plans of D3. Prices are stored in ten-thousandths of a credit.
PLANS = [
    # name, apiAccess, lightning, core, enrichLightning, enrichCore, /s, /min, /day
    ("free", False, True, False, False, False, 5, 100, 10_000),
    ("team", True, True, False, True, False, 10, 600, 25_000),
    ("business", True, True, True, True, True, 25, 1_500, 50_000),
    ("enterprise", True, True, True, True, True, 50, 3_000, 100_000),
]


def upgrade() -> None:

    op.create_table(
        "idempotency_keys",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id", "key", name="uq_idempotency_user_key"),
    )
    op.create_table(
        "outbox",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("available_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.create_index("ix_outbox_available", ["available_at"], unique=False)

    op.create_table(
        "plans",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("api_access", sa.Boolean(), nullable=False),
        sa.Column("lightning_scoring", sa.Boolean(), nullable=False),
        sa.Column("core_scoring", sa.Boolean(), nullable=False),
        sa.Column("enrichment_with_lightning", sa.Boolean(), nullable=False),
        sa.Column("enrichment_with_core", sa.Boolean(), nullable=False),
        sa.Column("per_second", sa.Integer(), nullable=False),
        sa.Column("per_minute", sa.Integer(), nullable=False),
        sa.Column("per_day", sa.Integer(), nullable=False),
        sa.Column("webhook_rate", sa.Integer(), nullable=False),
        sa.Column("cost_per_phone", sa.BigInteger(), nullable=False),
        sa.Column("cost_per_contact", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    plans = sa.table(
        "plans",
        *(
            sa.column(name)
            for name in (
                "name",
                "api_access",
                "lightning_scoring",
                "core_scoring",
                "enrichment_with_lightning",
                "enrichment_with_core",
                "per_second",
                "per_minute",
                "per_day",
                "webhook_rate",
                "cost_per_phone",
                "cost_per_contact",
            )
        ),
    )
    op.bulk_insert(
        plans,
        [
            {
                "name": name,
                "api_access": api,
                "lightning_scoring": lightning,
                "core_scoring": core,
                "enrichment_with_lightning": enrich_lightning,
                "enrichment_with_core": enrich_core,
                "per_second": per_second,
                "per_minute": per_minute,
                "per_day": per_day,
                "webhook_rate": 5,
                "cost_per_phone": 500,
                "cost_per_contact": 10_000,
            }
            for (
                name,
                api,
                lightning,
                core,
                enrich_lightning,
                enrich_core,
                per_second,
                per_minute,
                per_day,
            ) in PLANS
        ],
    )
    op.create_table(
        "clients",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("plan_name", sa.String(length=64), nullable=False),
        sa.Column("overrides", sa.JSON(), nullable=False),
        sa.Column("credits", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["plan_name"],
            ["plans.name"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "credit_ledger",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("client_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=True),
        sa.Column("job_id", sa.String(length=36), nullable=True),
        sa.Column("delta", sa.BigInteger(), nullable=False),
        sa.Column("balance_after", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["clients.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("credit_ledger", schema=None) as batch_op:
        batch_op.create_index("ix_credit_ledger_client", ["client_id", "id"], unique=False)

    op.create_table(
        "users",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("client_id", sa.String(length=36), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["clients.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email"),
    )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_users_client_id"), ["client_id"], unique=False)

    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("client_id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["clients.id"],
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_user_id"), ["user_id"], unique=False)

    op.create_table(
        "jobs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("client_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("job_type", sa.String(length=32), nullable=False),
        sa.Column("scoring_type", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("total_count", sa.Integer(), nullable=False),
        sa.Column("accepted_count", sa.Integer(), nullable=False),
        sa.Column("processed_count", sa.Integer(), nullable=False),
        sa.Column("enrichment_rejected_count", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finalized_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["clients.id"],
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index("ix_jobs_user_created", ["user_id", "created_at"], unique=False)

    op.create_table(
        "contacts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("client_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("first_name", sa.String(length=1000), nullable=True),
        sa.Column("last_name", sa.String(length=1000), nullable=True),
        sa.Column("email", sa.String(length=1000), nullable=True),
        sa.Column("company_account", sa.String(length=1000), nullable=True),
        sa.Column("linkedin_url", sa.String(length=1000), nullable=True),
        sa.Column("fields", sa.JSON(), nullable=False),
        sa.Column("unmapped_fields", sa.JSON(), nullable=False),
        sa.Column("phones", sa.JSON(), nullable=False),
        sa.Column("lead_status", sa.String(length=32), nullable=False),
        sa.Column("best_phone", sa.JSON(), nullable=True),
        sa.Column("rejected_reason", sa.String(length=200), nullable=True),
        sa.Column("enrichment_contact_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("scored_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_contacts_client_id"), ["client_id"], unique=False)
        batch_op.create_index("ix_contacts_job_ordinal", ["job_id", "ordinal"], unique=True)


def downgrade() -> None:

    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.drop_index("ix_contacts_job_ordinal")
        batch_op.drop_index(batch_op.f("ix_contacts_client_id"))

    op.drop_table("contacts")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_jobs_user_created")

    op.drop_table("jobs")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_user_id"))

    op.drop_table("api_keys")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_client_id"))

    op.drop_table("users")
    with op.batch_alter_table("credit_ledger", schema=None) as batch_op:
        batch_op.drop_index("ix_credit_ledger_client")

    op.drop_table("credit_ledger")
    op.drop_table("clients")
    op.drop_table("plans")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_available")

    op.drop_table("outbox")
    op.drop_table("idempotency_keys")
