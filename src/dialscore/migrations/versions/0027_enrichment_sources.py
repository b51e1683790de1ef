"""enrichment sources: a client's own provider keys and waterfall order, which source found
each contact, and what each source was asked and found per job (P204, P205)

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-10 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "client_provider_keys",
        sa.Column("client_id", sa.String(length=36), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=False),
        sa.Column("key_ciphertext", sa.Text(), nullable=False),
        sa.Column("last_four", sa.String(length=4), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=36), nullable=True),
        sa.Column("refused_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("refused_reason", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(["client_id"], ["clients.id"]),
        sa.PrimaryKeyConstraint("client_id", "provider"),
    )
    op.create_table(
        "enrichment_tallies",
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("own_key", sa.Boolean(), nullable=False),
        sa.Column("client_id", sa.String(length=36), nullable=False),
        sa.Column("job_created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tried", sa.Integer(), nullable=False),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.Column("named", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("job_id", "source", "own_key"),
    )
    with op.batch_alter_table("enrichment_tallies", schema=None) as batch_op:
        batch_op.create_index(
            "ix_enrichment_tallies_client_created", ["client_id", "job_created_at"], unique=False
        )
    with op.batch_alter_table("clients", schema=None) as batch_op:
        batch_op.add_column(sa.Column("enrichment_order", sa.JSON(), nullable=True))
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("enrichment_source", sa.String(length=32), nullable=True))
        batch_op.add_column(
            sa.Column("enrichment_own_key", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.drop_column("enrichment_own_key")
        batch_op.drop_column("enrichment_source")
    with op.batch_alter_table("clients", schema=None) as batch_op:
        batch_op.drop_column("enrichment_order")
    with op.batch_alter_table("enrichment_tallies", schema=None) as batch_op:
        batch_op.drop_index("ix_enrichment_tallies_client_created")
    op.drop_table("enrichment_tallies")
    op.drop_table("client_provider_keys")
